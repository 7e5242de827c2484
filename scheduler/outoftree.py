"""Out-of-tree plugins: Python modules that add plugins to the scheduler, as ``app.WithPlugin`` does.

kube-scheduler is extended by compiling plugins into a new binary
(``app.NewSchedulerCommand(app.WithPlugin(name, factory))``); kubesim's
scheduler imports them instead: ``python -m scheduler --plugin-module
mypkg.plugins`` (repeatable) imports ``mypkg.plugins``, which lists its
plugins in a module-level mapping::

    # mypkg/plugins.py
    from scheduler.framework.interface import Code, CycleState, Handle, Status
    from scheduler.framework.types import NodeInfo, PodInfo

    class NoGPUNodes:
        name = "NoGPUNodes"

        def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
            if "gpu" in node.labels:
                return Status(Code.UNSCHEDULABLE, "node(s) are kept for GPU Pods")
            return Status()

    def new(args, handle: Handle) -> NoGPUNodes:   # args: the profile's pluginConfig for it
        return NoGPUNodes()

    PLUGINS = {"NoGPUNodes": new}

A plugin implements the extension points it needs (the protocols of
:mod:`scheduler.framework.interface`: PreEnqueue, QueueSort, PreFilter,
Filter, PostFilter, PreScore, Score, Reserve, Permit, PreBind, Bind,
PostBind, EnqueueExtensions), with the same :class:`Status`,
:class:`CycleState`, :class:`PodInfo` and :class:`NodeInfo` the in-tree
plugins use; the profile enables it by name like any other plugin and passes
its ``pluginConfig`` args to the factory. An exception raised by a plugin
becomes an ERROR Status for that Pod (it is retried with backoff); the
scheduler keeps running. ``scheduler_plugins.coscheduling`` and
``scheduler_plugins.binpacking`` are two examples.

Errors here (a module that cannot be imported, no ``PLUGINS``, a name that
an in-tree plugin or another module already has) are :class:`PluginModuleError`,
refused before the scheduler starts. Pure, apart from the imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.framework.interface import PluginFactory
from scheduler.plugins.registry import IN_TREE


class PluginModuleError(ValueError):
    """An out-of-tree plugin module that cannot be used; the message says why."""


def load_registry(modules: Sequence[str], base: Mapping[str, PluginFactory] = IN_TREE) -> dict[str, PluginFactory]:
    """The in-tree registry plus the plugins of every module (``NewRegistry`` merged with ``outOfTreeRegistry``)."""
    registry = dict(base)
    origin: dict[str, str] = {}
    for module_name in modules:
        for name, factory in plugins_of(module_name).items():
            if name in base:
                raise PluginModuleError(f"plugin module {module_name}: a plugin named {name!r} already exists "
                                        "in-tree")
            if name in origin:
                raise PluginModuleError(f"plugin module {module_name}: a plugin named {name!r} already comes "
                                        f"from {origin[name]}")
            origin[name] = module_name
            registry[name] = factory
    return registry


def plugins_of(module_name: str) -> dict[str, PluginFactory]:
    """The ``PLUGINS`` mapping of one module, checked."""
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # noqa: BLE001 - any failure of foreign code is reported the same way
        raise PluginModuleError(f"cannot import plugin module {module_name}: {type(err).__name__}: {err}") from None
    plugins: Any = getattr(module, "PLUGINS", None)
    if not isinstance(plugins, Mapping):
        raise PluginModuleError(f"plugin module {module_name} has no PLUGINS mapping of plugin name to factory")
    out: dict[str, PluginFactory] = {}
    for name, factory in plugins.items():
        if not isinstance(name, str) or not name:
            raise PluginModuleError(f"plugin module {module_name}: plugin names must be non-empty strings, not "
                                    f"{name!r}")
        if not callable(factory):
            raise PluginModuleError(f"plugin module {module_name}: the factory of {name!r} is not callable")
        out[name] = factory
    return out
