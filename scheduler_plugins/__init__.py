"""Example out-of-tree scheduler plugins, loaded with ``python -m scheduler --plugin-module ...``.

Named after kubernetes-sigs/scheduler-plugins, where Kubernetes keeps the
plugins that are not in kube-scheduler: they use only the public framework
(:mod:`scheduler.framework.interface` and :mod:`scheduler.framework.types`),
exactly as a researcher's own plugin would (see :mod:`scheduler.outoftree`).

- ``scheduler_plugins.coscheduling``: all-or-nothing gang scheduling of the
  Pods of a PodGroup custom resource;
- ``scheduler_plugins.binpacking``: a Score plugin that fills the fullest
  node the Pod fits on first.
"""
