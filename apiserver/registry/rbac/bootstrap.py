"""Creating and reconciling the default RBAC roles at every start (``poststarthook/rbac/bootstrap-roles``).

As kube-apiserver's RBAC post-start hook: every role and binding of
:mod:`.bootstrappolicy` that does not exist is created; one that exists with
``rbac.authorization.kubernetes.io/autoupdate: "true"`` gets back the
permissions, subjects, labels, annotations and aggregation selectors the
default has and it lost (what users added stays); one without that
annotation is left as the user made it. Until this is done the APIServer is
not ready (``/readyz`` reports the hook), because without the roles every
component and anonymous probe would be refused.

One task, retrying until etcd answers; it writes through the stores as the
server itself (no admission, no escalation check).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from apiserver import errors
from apiserver.authorization.rules import Rule, uncovered
from apiserver.registry.rbac import bootstrappolicy as policy
from apiserver.registry.store import WriteOptions
from apiserver.storage.objects import Entry
from machinery.api import kinds

if TYPE_CHECKING:
    from apiserver.server import APIServer

log = logging.getLogger("apiserver")
Obj = dict[str, Any]


def _reconcile_meta(current: Obj, wanted: Obj) -> None:
    meta = current.setdefault("metadata", {})
    for key in ("labels", "annotations"):
        merged = dict(meta.get(key) or {})
        for k, v in ((wanted.get("metadata") or {}).get(key) or {}).items():
            merged.setdefault(k, v)
        meta[key] = merged


def reconcile_role(current: Obj, wanted: Obj) -> Obj:
    """The role with the default's permissions it lacks added back (what it has more is kept)."""
    _reconcile_meta(current, wanted)
    have = [Rule.from_dict(r) for r in current.get("rules") or () if isinstance(r, dict)]
    if wanted.get("rules"):
        missing = [r for r in wanted["rules"] if uncovered(have, [Rule.from_dict(r)])]
        if missing:
            current["rules"] = [*(current.get("rules") or []), *missing]
    if "aggregationRule" in wanted:
        rule = current.get("aggregationRule") or {}
        selectors = list(rule.get("clusterRoleSelectors") or [])
        for selector in wanted["aggregationRule"]["clusterRoleSelectors"]:
            if selector not in selectors:
                selectors.append(selector)
        current["aggregationRule"] = {**rule, "clusterRoleSelectors": selectors}
    return current


def reconcile_binding(current: Obj, wanted: Obj) -> Obj:
    """The binding with the default's subjects it lacks added back."""
    _reconcile_meta(current, wanted)
    subjects = list(current.get("subjects") or [])
    for subject in wanted.get("subjects") or ():
        if not any(s.get("kind") == subject["kind"] and s.get("name") == subject["name"] and
                   (s.get("namespace") or "") == (subject.get("namespace") or "") for s in subjects):
            subjects.append(subject)
    if subjects:
        current["subjects"] = subjects
    return current


def defaults() -> list[tuple[kinds.ResourceInfo[Any], Obj, Callable[[Obj, Obj], Obj]]]:
    """(resource, default object, reconcile) for every default, roles before the bindings that name them."""
    return ([(kinds.CLUSTER_ROLES, o, reconcile_role) for o in policy.cluster_roles()]
            + [(kinds.CLUSTER_ROLE_BINDINGS, o, reconcile_binding) for o in policy.cluster_role_bindings()]
            + [(kinds.ROLES, o, reconcile_role) for o in policy.namespace_roles()]
            + [(kinds.ROLE_BINDINGS, o, reconcile_binding) for o in policy.namespace_role_bindings()])


async def _ensure_one(server: APIServer, info: kinds.ResourceInfo[Any], wanted: Obj,
                      reconcile: Callable[[Obj, Obj], Obj]) -> None:
    meta = wanted["metadata"]
    namespace = meta.get("namespace")
    store = server.store(info)
    opts = WriteOptions(field_manager="kube-apiserver")

    def update(current: Obj, _entry: Entry) -> Obj:
        if ((current.get("metadata") or {}).get("annotations") or {}).get(policy.AUTOUPDATE) != "true":
            return current
        return reconcile(current, wanted)

    await store.update_with(namespace, meta["name"], update, opts, create=lambda: copy.deepcopy(wanted),
                            create_on_update=True)


async def _ensure_retrying(server: APIServer, info: kinds.ResourceInfo[Any], wanted: Obj,
                           reconcile: Callable[[Obj, Obj], Obj]) -> None:
    while True:
        try:
            await _ensure_one(server, info, wanted, reconcile)
            return
        except errors.APIError as e:
            log.warning("bootstrapping RBAC %s %s: %s", info.kind, wanted["metadata"]["name"], e.message)
            await asyncio.sleep(0.5)


async def ensure(server: APIServer) -> None:
    """Create or reconcile every default (concurrently: a first start writes about 130 objects); then mark the hook done."""
    for info in (kinds.CLUSTER_ROLES, kinds.CLUSTER_ROLE_BINDINGS, kinds.ROLES, kinds.ROLE_BINDINGS):
        await server.caches[info].ready.wait()
    await asyncio.gather(*(_ensure_retrying(server, info, wanted, reconcile)
                           for info, wanted, reconcile in defaults()))
    server.rbac_bootstrapped.set()
    log.info("created or reconciled the default RBAC roles and bindings")
