"""What every controller is built from: the shared client, informers, event broadcaster and options.

kube-controller-manager hands each controller a ``ControllerContext``; this is
kubesim's. It exists so that controllers take their collaborators as
arguments (tests build one around a fake API and a fake clock) instead of
reaching for process globals.

Immutable; the objects it points to are shared by every controller of the
process and used from its one event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from machinery.client.clock import Clock, RealClock
from machinery.client.rest import Client
from machinery.events import EventBroadcaster
from machinery.informer.shared import InformerFactory


@dataclass(frozen=True, slots=True)
class Options:
    """The controllers' settings, with Kubernetes' flag defaults (durations in seconds)."""

    concurrent_rc_syncs: int = 5
    concurrent_gc_syncs: int = 20
    concurrent_namespace_syncs: int = 10
    concurrent_replicaset_syncs: int = 5
    concurrent_deployment_syncs: int = 5
    concurrent_statefulset_syncs: int = 5
    concurrent_daemonset_syncs: int = 2
    concurrent_job_syncs: int = 5
    concurrent_cron_job_syncs: int = 5
    concurrent_ttl_after_finished_syncs: int = 5
    concurrent_endpoint_syncs: int = 5
    concurrent_service_endpoint_syncs: int = 5
    concurrent_serviceaccount_syncs: int = 5
    concurrent_resource_quota_syncs: int = 5
    concurrent_horizontal_pod_autoscaler_syncs: int = 5
    resource_quota_sync_period: float = 300.0
    horizontal_pod_autoscaler_sync_period: float = 15.0
    horizontal_pod_autoscaler_tolerance: float = 0.1
    horizontal_pod_autoscaler_downscale_stabilization: float = 300.0
    #: How often the garbage collector and namespace controller re-read discovery (custom resources).
    discovery_refresh_period: float = 30.0
    #: The cluster CA bundle the root CA publisher puts in every namespace (``--root-ca-file``'s contents).
    root_ca: str = ""
    #: The PersistentVolume binder's periodic resync (``--pvclaimbinder-sync-period``).
    pvclaimbinder_sync_period: float = 15.0
    node_monitor_period: float = 5.0
    node_monitor_grace_period: float = 40.0
    node_startup_grace_period: float = 60.0
    node_eviction_rate: float = 0.1
    secondary_node_eviction_rate: float = 0.01
    large_cluster_size_threshold: int = 50
    unhealthy_zone_threshold: float = 0.55


@dataclass(frozen=True, slots=True)
class ControllerContext:
    client: Client
    informers: InformerFactory
    events: EventBroadcaster
    options: Options = field(default_factory=Options)
    #: False once leadership may have been lost: writers check it before acting.
    is_leading: Callable[[], bool] = lambda: True
    clock: Clock = field(default_factory=RealClock)
