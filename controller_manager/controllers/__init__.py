"""Every controller of kubesim's kube-controller-manager, one module each, under Kubernetes' names.

Each module exports ``NAME`` (the canonical name ``--controllers`` takes, as
Kubernetes spells it since 1.28), ``ALIASES`` (the older names) and the
controller class; :data:`controller_manager.app.CONTROLLERS` lists them.
What several controllers share lives beside this package:
:mod:`~controller_manager.podcontrol` (Pods from templates, slow start),
:mod:`~controller_manager.controllerref` (adoption and release),
:mod:`~controller_manager.expectations`, :mod:`~controller_manager.podutil`,
:mod:`~controller_manager.history` (ControllerRevisions), and the pure
arithmetic of Deployments, Jobs and Endpoints (``deploymentutil``,
``jobutil``, ``endpointutil``). The ReplicaSet controller is written once
(:mod:`.replicaset`) and :mod:`.replication` adapts it to RCs.
"""
