"""RBAC escalation prevention for bindings: the role a binding names is read from storage, not the cache.

kube-apiserver reads that role through its registry, so a Role created a moment before its binding
counts even on an APIServer whose watch cache has not seen it yet (CI once answered such a binding 404).
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from apiserver import errors
from apiserver.admission import UserInfo
from apiserver.authorization.authorizer import AlwaysDeny, Rules
from apiserver.authorization.rules import Rule
from apiserver.registry.rbac import escalation
from apiserver.storage.objects import Entry
from machinery.api import kinds

ANN = UserInfo("ann", ("system:authenticated",))
ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "pod-reader", "namespace": "team"},
        "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}
BINDING = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
           "metadata": {"name": "bo-reads", "namespace": "team"},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
           "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bo"}]}


class EmptyCache:
    def get(self, _key: str) -> None:
        return None


class RolesInEtcd:
    """A store whose watch cache has not seen the Role yet, though etcd holds it."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.cache = EmptyCache()
        self.objects = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects}

    async def get(self, namespace: str | None, name: str) -> Entry:
        obj = self.objects.get((namespace or "", name))
        if obj is None:
            raise errors.not_found(kinds.ROLES, name)
        key = kinds.ROLES.etcd_key(namespace, name)
        return Entry(key, orjson.dumps(obj), 7)


class Resolver:
    def __init__(self, held: list[Rule]) -> None:
        self.held = held

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return Rules(self.held, [])


class Context:
    def __init__(self, store: RolesInEtcd, held: list[Rule]) -> None:
        self._store = store
        self.authorizer = AlwaysDeny()
        self.rule_resolver = Resolver(held)

    def store(self, _info: Any) -> RolesInEtcd:
        return self._store


def test_a_binding_to_a_role_the_cache_has_not_seen_is_judged_on_the_stored_role() -> None:
    ctx = Context(RolesInEtcd(ROLE), [Rule(("get", "list"), ("",), ("pods",))])
    asyncio.run(escalation.check_binding(ctx, ANN, kinds.ROLE_BINDINGS, BINDING, None))  # type: ignore[arg-type]


def test_a_binding_to_a_role_the_user_does_not_hold_is_forbidden_and_to_no_role_not_found() -> None:
    ctx = Context(RolesInEtcd(ROLE), [Rule(("list",), ("",), ("pods",))])
    with pytest.raises(errors.APIError) as refused:
        asyncio.run(escalation.check_binding(ctx, ANN, kinds.ROLE_BINDINGS, BINDING, None))  # type: ignore[arg-type]
    assert refused.value.code == 403
    ctx = Context(RolesInEtcd(), [Rule(("get",), ("",), ("pods",))])
    with pytest.raises(errors.APIError) as missing:
        asyncio.run(escalation.check_binding(ctx, ANN, kinds.ROLE_BINDINGS, BINDING, None))  # type: ignore[arg-type]
    assert missing.value.code == 404
