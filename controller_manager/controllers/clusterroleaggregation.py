"""The clusterrole-aggregation controller: an aggregated ClusterRole's rules are those of the roles it selects.

``admin``, ``edit`` and ``view`` (and any ClusterRole with an
``aggregationRule``) hold no rules of their own: as Kubernetes'
``pkg/controller/clusterroleaggregation`` does, this controller sets their
``rules`` to the union of the rules of every ClusterRole matched by one of
their ``clusterRoleSelectors`` (itself excluded), taking the roles in name
order and each distinct rule once. Labelling a new ClusterRole
``rbac.authorization.k8s.io/aggregate-to-view: "true"`` thus grants its rules
to every user bound to ``view`` (and, through ``edit``'s and ``admin``'s
labels, to theirs).

It writes as the ``clusterrole-aggregation-controller`` ServiceAccount, whose
role allows ``escalate`` on ClusterRoles: the APIServer's escalation check lets
it grant what it does not hold itself.

Concurrency: one worker; any ClusterRole change enqueues every aggregated role
(aggregation is rare and the roles few), and a sync reads the informer's cache.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from kubernetes.client import V1ClusterRole

from controller_manager.context import ControllerContext
from machinery.api.kinds import CLUSTER_ROLES, ObjectKey
from machinery.api.labels import Selector, SelectorError
from machinery.client.errors import Conflict, NotFound
from machinery.client.objects import key_of, to_wire
from machinery.controller import Controller
from machinery.informer.shared import DeletedFinalStateUnknown

log = logging.getLogger(__name__)

NAME: Final = "clusterrole-aggregation-controller"
ALIASES: Final = ("clusterrole-aggregation",)
#: The ServiceAccount it runs as with ``--use-service-account-credentials``.
SERVICE_ACCOUNT: Final = "clusterrole-aggregation-controller"

Obj = dict[str, Any]


def aggregate(role: Obj, roles: list[Obj]) -> list[Obj] | None:
    """The rules ``role`` aggregates from ``roles``; None when it has no aggregation rule."""
    rule = role.get("aggregationRule")
    if not rule:
        return None
    selectors = []
    for spec in rule.get("clusterRoleSelectors") or ():
        try:
            selectors.append(Selector.from_label_selector(spec))
        except SelectorError:
            continue
    name = (role.get("metadata") or {}).get("name")
    rules: list[Obj] = []
    for other in sorted(roles, key=lambda r: (r.get("metadata") or {}).get("name") or ""):
        meta = other.get("metadata") or {}
        if meta.get("name") == name:
            continue
        labels = meta.get("labels") or {}
        if not any(s.matches(labels) for s in selectors):
            continue
        for candidate in other.get("rules") or ():
            if candidate not in rules:
                rules.append(candidate)
    return rules


class ClusterRoleAggregationController(Controller):
    def __init__(self, ctx: ControllerContext) -> None:
        self._roles = ctx.informers.informer(CLUSTER_ROLES)
        super().__init__(NAME, informers=[self._roles], workers=1, clock=ctx.clock)
        self._client = ctx.client
        self._is_leading = ctx.is_leading
        self._roles.add_handler(on_add=self._changed, on_update=lambda _old, new: self._changed(new),
                                on_delete=self._changed)

    def _changed(self, _role: V1ClusterRole | DeletedFinalStateUnknown[Any]) -> None:
        for role in self._roles.store.list():
            if role.aggregation_rule is not None:
                self.queue.add(key_of(role))

    async def sync(self, key: ObjectKey) -> None:
        if not self._is_leading():
            return
        role = self._roles.store.get(key)
        if role is None:
            return
        wire = to_wire(role)
        rules = aggregate(wire, [to_wire(r) for r in self._roles.store.list()])
        if rules is None or rules == (wire.get("rules") or []):
            return
        wire["rules"] = rules
        try:
            await self._client.update(CLUSTER_ROLES, wire, field_manager=NAME)
        except NotFound:
            return
        except Conflict:
            # The informer will bring the newer version; its update enqueues this role again.
            self.queue.add_rate_limited(key)
            return
        log.info("%s: aggregated %d rules into ClusterRole %s", NAME, len(rules), key)
