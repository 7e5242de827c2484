"""Controllers that run inside the APIServer, as kube-apiserver's own bootstrap controllers do."""
