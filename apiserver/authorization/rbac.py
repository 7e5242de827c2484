"""The RBAC authorizer and rule resolver, reading Roles, ClusterRoles and their bindings from the watch caches.

As kube-apiserver's RBAC authorizer does, a request is allowed when some rule
of some role bound to the user (by name, by one of their groups, or as a
ServiceAccount) allows it: ClusterRoleBindings first, then the RoleBindings of
the request's namespace. RBAC never denies; it has no opinion, with a reason
when bindings point at roles that do not exist
(``RBAC: clusterrole.rbac.authorization.k8s.io "x" not found``). An allowed
request's reason names the binding, as audit logs show it
(``RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole
"cluster-admin" to Group "system:masters"``).

Speed: the four caches are read into an index (bindings by user, group and
ServiceAccount; roles compiled into :class:`~apiserver.authorization.rules.Rule`)
only when one of them changed, and the rules one user holds in one namespace
are kept until the next change. A request then costs a dict lookup and a
loop over that user's rules.

Concurrency: called on the event loop between awaits; the index is replaced
whole, never mutated while a request reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import orjson

from apiserver.admission import UserInfo
from apiserver.authorization.authorizer import ALLOW, NO_OPINION, Attributes, Decision, Rules
from apiserver.authorization.rules import Rule
from machinery.api import kinds

if TYPE_CHECKING:
    from apiserver.watchcache import WatchCache

Obj = dict[str, Any]
CacheOf = Callable[[kinds.ResourceInfo[Any]], "WatchCache | None"]

SA_PREFIX: Final = "system:serviceaccount:"
_MAX_RESOLVED: Final = 16_384
_SOURCES: Final = (kinds.CLUSTER_ROLES, kinds.CLUSTER_ROLE_BINDINGS, kinds.ROLES, kinds.ROLE_BINDINGS)


def service_account_user(namespace: str, name: str) -> str:
    return f"{SA_PREFIX}{namespace}:{name}"


def describe_subject(subject: Obj, namespace: str) -> str:
    kind = subject.get("kind") or ""
    name = subject.get("name") or ""
    if kind == "ServiceAccount":
        return f'{kind} "{(subject.get("namespace") or namespace)}/{name}"'
    return f'{kind} "{name}"'


@dataclass(frozen=True, slots=True)
class _Grant:
    """One binding's subject matching a user: what the binding grants, and how to name it."""

    source: str           # 'ClusterRoleBinding "x" of ClusterRole "y" to User "z"'
    role_kind: str        # ClusterRole or Role
    role_name: str
    role_namespace: str   # the binding's namespace for a Role


@dataclass(slots=True)
class _Bindings:
    by_user: dict[str, list[_Grant]] = field(default_factory=dict)
    by_group: dict[str, list[_Grant]] = field(default_factory=dict)


@dataclass(slots=True)
class _Index:
    cluster_roles: dict[str, tuple[Rule, ...]]
    roles: dict[tuple[str, str], tuple[Rule, ...]]
    cluster: _Bindings
    namespaced: dict[str, _Bindings]


def _objects(cache: WatchCache | None) -> list[Obj]:
    if cache is None:
        return []
    return [orjson.loads(entry.raw) for entry in cache.state.values()]


def _compile(rules: Any) -> tuple[Rule, ...]:
    return tuple(Rule.from_dict(r) for r in rules or () if isinstance(r, dict))


def _add_binding(target: _Bindings, binding: Obj, namespace: str) -> None:
    meta = binding.get("metadata") or {}
    name = meta.get("name") or ""
    ref = binding.get("roleRef") or {}
    kind, role = ref.get("kind") or "", ref.get("name") or ""
    label = f'RoleBinding "{name}/{namespace}"' if namespace else f'ClusterRoleBinding "{name}"'
    for subject in binding.get("subjects") or ():
        if not isinstance(subject, dict):
            continue
        grant = _Grant(f"{label} of {kind} \"{role}\" to {describe_subject(subject, namespace)}", kind, role,
                       namespace)
        skind, sname = subject.get("kind"), subject.get("name") or ""
        if skind == "User":
            target.by_user.setdefault(sname, []).append(grant)
        elif skind == "Group":
            target.by_group.setdefault(sname, []).append(grant)
        elif skind == "ServiceAccount":
            sa_namespace = subject.get("namespace") or namespace
            if sa_namespace:
                target.by_user.setdefault(service_account_user(sa_namespace, sname), []).append(grant)


def build_index(cluster_roles: list[Obj], cluster_role_bindings: list[Obj], roles: list[Obj],
                role_bindings: list[Obj]) -> _Index:
    cr = {(o.get("metadata") or {}).get("name") or "": _compile(o.get("rules")) for o in cluster_roles}
    r = {((o.get("metadata") or {}).get("namespace") or "", (o.get("metadata") or {}).get("name") or ""):
         _compile(o.get("rules")) for o in roles}
    cluster = _Bindings()
    for binding in cluster_role_bindings:
        _add_binding(cluster, binding, "")
    namespaced: dict[str, _Bindings] = {}
    for binding in role_bindings:
        ns = (binding.get("metadata") or {}).get("namespace") or ""
        _add_binding(namespaced.setdefault(ns, _Bindings()), binding, ns)
    return _Index(cr, r, cluster, namespaced)


def _cache_version(cache: WatchCache | None) -> tuple[int, int]:
    """Changes whenever the cache's content does: an event (the window's last revision), a relist (a new
    state dict and oldest revision); not on progress notifications."""
    if cache is None:
        return (0, 0)
    return (id(cache.state), cache.window_rvs[-1] if cache.window_rvs else cache.oldest_rv)


class RBAC:
    """``--authorization-mode=RBAC``: the authorizer and its rule resolver."""

    def __init__(self, cache_of: CacheOf) -> None:
        self._cache_of = cache_of
        self._caches: list[WatchCache | None] | None = None
        self._version: tuple[Any, ...] | None = None
        self._index = build_index([], [], [], [])
        self._resolved: dict[tuple[str, tuple[str, ...], str], tuple[list[tuple[str, tuple[Rule, ...]]],
                                                                      list[str]]] = {}

    def _current(self) -> _Index:
        # Checked on every request: the four caches are looked up once they all exist, then only read.
        caches = self._caches
        if caches is None:
            caches = [self._cache_of(info) for info in _SOURCES]
            if all(c is not None for c in caches):
                self._caches = caches
        version = (_cache_version(caches[0]), _cache_version(caches[1]), _cache_version(caches[2]),
                   _cache_version(caches[3]))
        if version != self._version:
            self._index = build_index(*(_objects(c) for c in caches))
            self._resolved = {}
            self._version = version
        return self._index

    def _role_rules(self, index: _Index, grant: _Grant) -> tuple[Rule, ...] | str:
        """The rules a grant's role holds, or why there are none (the role is missing)."""
        if grant.role_kind == "ClusterRole":
            found = index.cluster_roles.get(grant.role_name)
            return found if found is not None else \
                f'clusterrole.rbac.authorization.k8s.io "{grant.role_name}" not found'
        if grant.role_kind == "Role":
            found = index.roles.get((grant.role_namespace, grant.role_name))
            return found if found is not None else f'role.rbac.authorization.k8s.io "{grant.role_name}" not found'
        return f'unknown role kind "{grant.role_kind}"'

    def resolve(self, user: UserInfo, namespace: str) -> tuple[list[tuple[str, tuple[Rule, ...]]], list[str]]:
        """Every (binding description, rules) that applies to ``user`` in ``namespace``, and the errors met."""
        index = self._current()
        key = (user.name, user.groups, namespace)
        cached = self._resolved.get(key)
        if cached is not None:
            return cached
        grants: list[_Grant] = []
        scopes = [index.cluster]
        if namespace and namespace in index.namespaced:
            scopes.append(index.namespaced[namespace])
        for scope in scopes:
            grants += scope.by_user.get(user.name, ())
            for group in user.groups:
                grants += scope.by_group.get(group, ())
        found: list[tuple[str, tuple[Rule, ...]]] = []
        errors: list[str] = []
        for grant in grants:
            rules = self._role_rules(index, grant)
            if isinstance(rules, str):
                errors.append(rules)
            else:
                found.append((grant.source, rules))
        if len(self._resolved) >= _MAX_RESOLVED:
            self._resolved.clear()
        self._resolved[key] = (found, errors)
        return found, errors

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        found, errors = self.resolve(attrs.user, attrs.namespace if attrs.resource_request else "")
        for source, rules in found:
            for rule in rules:
                if attrs.resource_request:
                    if rule.allows_resource(attrs.verb, attrs.api_group, attrs.resource, attrs.subresource,
                                            attrs.name):
                        return ALLOW, f"RBAC: allowed by {source}"
                elif rule.allows_path(attrs.verb, attrs.path):
                    return ALLOW, f"RBAC: allowed by {source}"
        if not errors:
            return NO_OPINION, ""
        return NO_OPINION, "RBAC: " + (errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        found, errors = self.resolve(user, namespace)
        out = Rules(incomplete=bool(errors), errors=list(errors))
        for _source, rules in found:
            for rule in rules:
                if rule.non_resource_urls:
                    out.non_resource.append(rule)
                if rule.resources:
                    out.resource.append(rule)
        return out
