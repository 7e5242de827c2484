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
import dataclasses
import logging
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from controller_manager.context import ControllerContext, Options
from controller_manager.controllers import (
    clusterroleaggregation,
    cronjob,
    daemonset,
    deployment,
    disruption,
    endpoints,
    endpointslice,
    garbagecollector,
    horizontalpodautoscaler,
    job,
    namespace,
    nodelifecycle,
    persistentvolume,
    replicaset,
    replication,
    resourcequota,
    rootcacertpublisher,
    serviceaccount,
    statefulset,
    tainteviction,
    ttlafterfinished,
)
from controller_manager.serviceaccounts import ServiceAccountClients
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
    #: Its ServiceAccount in kube-system with --use-service-account-credentials (Kubernetes' name, bound to
    #: ``system:controller:<it>`` by the default RBAC policy).
    service_account: str = ""


def _descriptor(module: Any, new: Callable[[ControllerContext], Runnable],
                service_account: str) -> ControllerDescriptor:
    """A controller module's descriptor: its ``NAME``, its ``ALIASES``, how to build it, and its ServiceAccount."""
    return ControllerDescriptor(module.NAME, module.ALIASES, new, service_account)


#: Every controller kubesim has, in the order they start (one line each).
CONTROLLERS: Final = (
    _descriptor(replication, replication.ReplicationManager, "replication-controller"),
    _descriptor(replicaset, replicaset.ReplicaSetManager, "replicaset-controller"),
    _descriptor(deployment, deployment.DeploymentController, "deployment-controller"),
    _descriptor(statefulset, statefulset.StatefulSetController, "statefulset-controller"),
    _descriptor(daemonset, daemonset.DaemonSetsController, "daemon-set-controller"),
    _descriptor(job, job.JobController, "job-controller"),
    _descriptor(ttlafterfinished, ttlafterfinished.TTLAfterFinishedController, "ttl-after-finished-controller"),
    _descriptor(cronjob, cronjob.CronJobController, "cronjob-controller"),
    _descriptor(horizontalpodautoscaler, horizontalpodautoscaler.HorizontalController,
                "horizontal-pod-autoscaler"),
    _descriptor(endpoints, endpoints.EndpointsController, "endpoint-controller"),
    _descriptor(endpointslice, endpointslice.EndpointSliceController, "endpointslice-controller"),
    _descriptor(disruption, disruption.DisruptionController, "disruption-controller"),
    _descriptor(resourcequota, resourcequota.ResourceQuotaController, "resourcequota-controller"),
    _descriptor(persistentvolume, persistentvolume.PersistentVolumeController, "persistent-volume-binder"),
    _descriptor(serviceaccount, serviceaccount.ServiceAccountsController, "service-account-controller"),
    _descriptor(rootcacertpublisher, rootcacertpublisher.Publisher, "root-ca-cert-publisher"),
    _descriptor(garbagecollector, garbagecollector.GarbageCollector, "generic-garbage-collector"),
    _descriptor(namespace, namespace.NamespaceController, "namespace-controller"),
    _descriptor(nodelifecycle, nodelifecycle.NodeLifecycleController, "node-controller"),
    # Kubernetes' taint eviction controller uses the node controller's ServiceAccount and role.
    _descriptor(tainteviction, tainteviction.TaintEvictionController, "node-controller"),
    _descriptor(clusterroleaggregation, clusterroleaggregation.ClusterRoleAggregationController,
                clusterroleaggregation.SERVICE_ACCOUNT),
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
    parser.add_argument("--use-service-account-credentials", type=process.bool_arg, nargs="?", const=True,
                        default=False, metavar="BOOL",
                        help="If true, use individual service account credentials for each controller "
                             "(default: false).")
    known = ", ".join(d.name for d in CONTROLLERS)
    parser.add_argument(
        "--controllers", type=parse_controllers, default=["*"], metavar="NAMES",
        help="A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' enables the "
             "controller named 'foo', '-foo' disables the controller named 'foo'. All controllers: "
             f"{known}. Older names (replicationcontroller, replicaset, garbagecollector, namespace, nodelifecycle...) "
             "are accepted too. (default: *)")
    for flag, what in _CONCURRENCY_FLAGS:
        attr = flag.removeprefix("--").replace("-", "_")
        parser.add_argument(flag, type=process.positive_int_arg, default=getattr(defaults, attr), metavar="N",
                            help=f"The number of {what} that are allowed to sync concurrently "
                                 "(default: %(default)s).")
    _duration_flag(parser, "--resource-quota-sync-period", defaults.resource_quota_sync_period,
                   "The period for syncing quota usage status in the system")
    _duration_flag(parser, "--horizontal-pod-autoscaler-sync-period",
                   defaults.horizontal_pod_autoscaler_sync_period,
                   "The period for syncing the number of pods in horizontal pod autoscaler")
    _duration_flag(parser, "--horizontal-pod-autoscaler-downscale-stabilization",
                   defaults.horizontal_pod_autoscaler_downscale_stabilization,
                   "The period for which autoscaler will look backwards and not scale down below any "
                   "recommendation it made during that period")
    parser.add_argument("--horizontal-pod-autoscaler-tolerance", type=_non_negative_float,
                        default=defaults.horizontal_pod_autoscaler_tolerance, metavar="FRACTION",
                        help="The minimum change (from 1.0) in the desired-to-actual metrics ratio for the "
                             "horizontal pod autoscaler to consider scaling (default: %(default)s).")
    parser.add_argument("--root-ca-file", type=_read_file, default=None, metavar="FILE",
                        help="If set, this root certificate authority will be included in service account's "
                             "token secret. This must be a valid PEM-encoded CA bundle.")
    _duration_flag(parser, "--pvclaimbinder-sync-period", defaults.pvclaimbinder_sync_period,
                   "The period for syncing persistent volumes and persistent volume claims")
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


#: The ``--concurrent-*-syncs`` flags, Kubernetes' names, and what each counts.
_CONCURRENCY_FLAGS: Final = (
    ("--concurrent-rc-syncs", "replication controllers"),
    ("--concurrent-replicaset-syncs", "replica sets"),
    ("--concurrent-deployment-syncs", "deployment objects"),
    ("--concurrent-statefulset-syncs", "statefulset objects"),
    ("--concurrent-daemonset-syncs", "daemonset objects"),
    ("--concurrent-job-syncs", "job objects"),
    ("--concurrent-cron-job-syncs", "cronjob objects"),
    ("--concurrent-ttl-after-finished-syncs", "ttl-after-finished-controller workers"),
    ("--concurrent-endpoint-syncs", "endpoint syncing operations"),
    ("--concurrent-service-endpoint-syncs", "service endpoint syncing operations"),
    ("--concurrent-serviceaccount-syncs", "service account objects"),
    ("--concurrent-resource-quota-syncs", "resource quotas"),
    ("--concurrent-horizontal-pod-autoscaler-syncs", "horizontal pod autoscaler objects"),
    ("--concurrent-gc-syncs", "garbage collector workers"),
    ("--concurrent-namespace-syncs", "namespace objects"),
)


def options_from_args(args: argparse.Namespace) -> Options:
    concurrency = {flag.removeprefix("--").replace("-", "_"): getattr(args, flag.removeprefix("--")
                                                                      .replace("-", "_"))
                   for flag, _ in _CONCURRENCY_FLAGS}
    return Options(
        **concurrency,
        resource_quota_sync_period=args.resource_quota_sync_period,
        horizontal_pod_autoscaler_sync_period=args.horizontal_pod_autoscaler_sync_period,
        horizontal_pod_autoscaler_downscale_stabilization=args.horizontal_pod_autoscaler_downscale_stabilization,
        horizontal_pod_autoscaler_tolerance=args.horizontal_pod_autoscaler_tolerance,
        pvclaimbinder_sync_period=args.pvclaimbinder_sync_period,
        root_ca=args.root_ca_file or "",
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
        accounts = ServiceAccountClients(rt.client) if rt.args.use_service_account_credentials else None
        controllers = []
        for d in selected:
            own = ctx
            if accounts is not None:
                client = await accounts.client_for(d.service_account or d.name)
                own = dataclasses.replace(ctx, client=client)
            controllers.append((d.name, d.new(own)))
        async with asyncio.TaskGroup() as group:
            if accounts is not None:
                group.create_task(accounts.renew_forever(), name="serviceaccount-tokens")
            for name, controller in controllers:
                log.info("starting %s", name)
                group.create_task(controller.run(), name=name)

    await rt.lead(lead)


def _duration_flag(parser: argparse.ArgumentParser, flag: str, default: float, help_text: str) -> None:
    parser.add_argument(flag, type=process.positive_duration_arg, default=default, metavar="DURATION",
                        help=f"{help_text} (default: {format_duration(default)}).")


def _read_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as err:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {err.strerror or err}") from None


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must not be negative, not {text}")
    return value
