"""The ReplicationController controller: steps 5 and 6 of the flow, "the one in charge of scaling".

It sees each ReplicationController through its watch (step 5) and keeps the
number of its active Pods equal to ``spec.replicas``, creating the missing
ones from ``spec.template`` (step 6) or deleting the surplus. As in
Kubernetes (``pkg/controller/replication``), it is the ReplicaSet controller
given an adapter: this module only says how an RC's selector (a plain label
map) is read and which name its Events carry; ownership, expectations, slow
start, the deletion ranking and the status are
:mod:`controller_manager.controllers.replicaset`'s.
"""

from __future__ import annotations

import functools
from typing import Final

from kubernetes.client import V1ReplicationController

from controller_manager.context import ControllerContext
from controller_manager.controllers.replicaset import (
    BURST_REPLICAS,
    ReplicaSetController,
    ReplicaSetKind,
    calculate_status,
    pods_to_delete,
)
from controller_manager.podcontrol import pod_from_template as _pod_from_template
from controller_manager.podcontrol import pod_prefix, slow_start_batch
from machinery.api.kinds import REPLICATION_CONTROLLERS
from machinery.api.labels import Selector, selector_from_set

NAME: Final = "replicationcontroller-controller"
ALIASES: Final = ("replicationcontroller",)
#: The event source Kubernetes' replication manager reports as.
EVENT_SOURCE: Final = "replication-controller"


def rc_selector(rc: V1ReplicationController) -> Selector:
    """The RC's ``spec.selector`` as a compiled selector (an empty one matches everything, as Kubernetes')."""
    selector = rc.spec.selector if rc.spec is not None else None
    return _compiled_selector(frozenset((selector or {}).items()))


@functools.lru_cache(maxsize=1024)
def _compiled_selector(pairs: frozenset[tuple[str, str]]) -> Selector:
    return selector_from_set(dict(pairs))


RC_KIND: Final = ReplicaSetKind(REPLICATION_CONTROLLERS, "replicationmanager", EVENT_SOURCE, rc_selector)


class ReplicationManager(ReplicaSetController[V1ReplicationController]):
    """The ReplicaSet controller over ReplicationControllers (``--concurrent-rc-syncs`` workers)."""

    def __init__(self, ctx: ControllerContext, *, burst_replicas: int = BURST_REPLICAS) -> None:
        super().__init__(ctx, RC_KIND, workers=ctx.options.concurrent_rc_syncs, burst_replicas=burst_replicas)


def pod_from_template(rc: V1ReplicationController) -> dict[str, object]:
    """``GetPodFromTemplate`` for an RC: the Pod to create, in wire form, owned by it."""
    template = rc.spec.template if rc.spec is not None else None
    return _pod_from_template(template, rc, REPLICATION_CONTROLLERS)


__all__ = ["ALIASES", "NAME", "ReplicationManager", "calculate_status", "pod_from_template", "pod_prefix",
           "pods_to_delete", "rc_selector", "slow_start_batch"]
