"""kubesim's web page of the live cluster: nodes, Pods, the scheduling queue and the 13 steps of a Pod.

``kubesim up`` serves it (``--ui-port``, default 8090); ``kubesim ui`` serves
it for any cluster reachable through a kubeconfig. The server
(:mod:`kubesim.ui.server`) is a client of the APIServer like every other
component; the page (``static/``) is plain HTML, CSS and JavaScript shipped in
the package, so nothing needs building or installing beyond kubesim itself.
"""
