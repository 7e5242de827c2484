"""The in-tree plugins, one folder each under Kubernetes' names (see :mod:`.names` and :mod:`.registry`)."""
