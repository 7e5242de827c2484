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
