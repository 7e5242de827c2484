"""kubesim's kube-controller-manager: its flags, its table of controllers, and what it runs once leading.

Every controller is one module with a canonical name (Kubernetes' since 1.28)
and the older aliases ``--controllers`` still accepts, so
``--controllers=*,-nodelifecycle`` and ``--controllers=*,-node-lifecycle-controller``
mean the same. The controllers and their informers are built only after this
process holds the ``kube-system/kube-controller-manager`` Lease, as Kubernetes
does: a standby watches nothing and writes nothing.

Concurrency: one event loop; :func:`main` runs every enabled controller as a
named task of one task group, so one crashing stops the process (and a
supervisor restarts it) rather than leaving it half alive.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from controller_manager import garbagecollector, namespace, nodelifecycle, tainteviction
from controller_manager.context import ControllerContext, Options
from controller_manager.controllers import replication
from machinery import process
from machinery.api.duration import format_duration
from machinery.process import Runtime

log = logging.getLogger(__name__)

COMPONENT: Final = "controller-manager"
LEASE_NAME: Final = "kube-controller-manager"


class Runnable(Protocol):
    def run(self) -> Coroutine[Any, Any, None]: ...


@dataclass(frozen=True, slots=True)
class ControllerDescriptor:
    name: str
    aliases: tuple[str, ...]
    new: Callable[[ControllerContext], Runnable]


#: Every controller kubesim has, in the order they start.
CONTROLLERS: Final = (
    ControllerDescriptor(replication.NAME, replication.ALIASES, replication.ReplicationManager),
    ControllerDescriptor(garbagecollector.NAME, garbagecollector.ALIASES, garbagecollector.GarbageCollector),
    ControllerDescriptor(namespace.NAME, namespace.ALIASES, namespace.NamespaceController),
    ControllerDescriptor(nodelifecycle.NAME, nodelifecycle.ALIASES, nodelifecycle.NodeLifecycleController),
    ControllerDescriptor(tainteviction.NAME, tainteviction.ALIASES, tainteviction.TaintEvictionController),
)
_CANONICAL: Final = {alias: d.name for d in CONTROLLERS for alias in (d.name, *d.aliases)}


def parse_controllers(text: str) -> list[str]:
    """``--controllers``: names, ``-name`` to disable, ``*`` for every controller on by default."""
    selectors = [s.strip() for s in text.split(",") if s.strip()]
    for selector in selectors:
        name = selector.removeprefix("-")
        if selector != "*" and name not in _CANONICAL:
            raise argparse.ArgumentTypeError(f'"{name}" is not in the list of known controllers')
    return selectors


def enabled_controllers(selectors: Sequence[str]) -> list[ControllerDescriptor]:
    """The controllers ``selectors`` turn on; the first selector naming a controller decides for it."""
    return [d for d in CONTROLLERS if _is_enabled(d.name, selectors)]


def _is_enabled(name: str, selectors: Sequence[str]) -> bool:
    star = False
    for selector in selectors:
        if selector == "*":
            star = True
            continue
        disable = selector.startswith("-")
        if _CANONICAL.get(selector.removeprefix("-")) == name:
            return not disable
    # Every kubesim controller is on by default, so "*" enables whatever was not named.
    return star


def add_flags(parser: argparse.ArgumentParser) -> None:
    defaults = Options()
    known = ", ".join(d.name for d in CONTROLLERS)
    parser.add_argument(
        "--controllers", type=parse_controllers, default=["*"], metavar="NAMES",
        help="A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' enables the "
             "controller named 'foo', '-foo' disables the controller named 'foo'. All controllers: "
             f"{known}. Older names (replicationcontroller, garbagecollector, namespace, nodelifecycle) "
             "are accepted too. (default: *)")
    parser.add_argument("--concurrent-rc-syncs", type=process.positive_int_arg, default=defaults.concurrent_rc_syncs,
                        metavar="N", help="The number of replication controllers that are allowed to sync "
                                          "concurrently (default: %(default)s).")
    parser.add_argument("--concurrent-gc-syncs", type=process.positive_int_arg, default=defaults.concurrent_gc_syncs,
                        metavar="N", help="The number of garbage collector workers that are allowed to sync "
                                          "concurrently (default: %(default)s).")
    parser.add_argument("--concurrent-namespace-syncs", type=process.positive_int_arg,
                        default=defaults.concurrent_namespace_syncs, metavar="N",
                        help="The number of namespace objects that are allowed to sync concurrently "
                             "(default: %(default)s).")
    _duration_flag(parser, "--node-monitor-period", defaults.node_monitor_period,
                   "The period for syncing NodeStatus in cloud-node-lifecycle-controller and node health in "
                   "node-lifecycle-controller")
    _duration_flag(parser, "--node-monitor-grace-period", defaults.node_monitor_grace_period,
                   "Amount of time which we allow running Node to be unresponsive before marking it "
                   "unhealthy. Must be N times more than kubelet's nodeStatusUpdateFrequency")
    _duration_flag(parser, "--node-startup-grace-period", defaults.node_startup_grace_period,
                   "Amount of time which we allow starting Node to be unresponsive before marking it "
                   "unhealthy")
    parser.add_argument("--node-eviction-rate", type=_non_negative_float, default=defaults.node_eviction_rate,
                        metavar="RATE",
                        help="Number of nodes per second on which pods are deleted in case of node failure "
                             "when a zone is healthy (default: %(default)s).")
    parser.add_argument("--secondary-node-eviction-rate", type=_non_negative_float,
                        default=defaults.secondary_node_eviction_rate, metavar="RATE",
                        help="Number of nodes per second on which pods are deleted in case of node failure "
                             "when a zone is unhealthy (default: %(default)s).")
    parser.add_argument("--large-cluster-size-threshold", type=process.positive_int_arg,
                        default=defaults.large_cluster_size_threshold, metavar="N",
                        help="Number of nodes from which node-lifecycle-controller treats the cluster as "
                             "large for the eviction logic purposes (default: %(default)s).")
    parser.add_argument("--unhealthy-zone-threshold", type=_non_negative_float,
                        default=defaults.unhealthy_zone_threshold, metavar="FRACTION",
                        help="Fraction of Nodes in a zone which needs to be not Ready (minimum 3) for zone "
                             "to be treated as unhealthy (default: %(default)s).")


def options_from_args(args: argparse.Namespace) -> Options:
    return Options(
        concurrent_rc_syncs=args.concurrent_rc_syncs, concurrent_gc_syncs=args.concurrent_gc_syncs,
        concurrent_namespace_syncs=args.concurrent_namespace_syncs,
        node_monitor_period=args.node_monitor_period,
        node_monitor_grace_period=args.node_monitor_grace_period,
        node_startup_grace_period=args.node_startup_grace_period, node_eviction_rate=args.node_eviction_rate,
        secondary_node_eviction_rate=args.secondary_node_eviction_rate,
        large_cluster_size_threshold=args.large_cluster_size_threshold,
        unhealthy_zone_threshold=args.unhealthy_zone_threshold)


async def main(rt: Runtime) -> None:
    options = options_from_args(rt.args)
    selected = enabled_controllers(rt.args.controllers)
    log.info("enabled controllers: %s", ", ".join(d.name for d in selected) or "none")

    async def lead() -> None:
        ctx = ControllerContext(client=rt.client, informers=rt.informers, events=rt.events, options=options,
                                is_leading=lambda: rt.is_leading)
        controllers = [(d.name, d.new(ctx)) for d in selected]
        async with asyncio.TaskGroup() as group:
            for name, controller in controllers:
                log.info("starting %s", name)
                group.create_task(controller.run(), name=name)

    await rt.lead(lead)


def _duration_flag(parser: argparse.ArgumentParser, flag: str, default: float, help_text: str) -> None:
    parser.add_argument(flag, type=process.positive_duration_arg, default=default, metavar="DURATION",
                        help=f"{help_text} (default: {format_duration(default)}).")


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must not be negative, not {text}")
    return value
