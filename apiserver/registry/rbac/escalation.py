"""RBAC's escalation prevention: nobody grants, through a role or a binding, what they do not hold.

kube-apiserver's policy-based storage of the RBAC objects
(``pkg/registry/rbac/*/policybased``), for client writes:

- members of ``system:masters`` may write anything;
- a Role or ClusterRole may be created or changed by someone allowed the
  ``escalate`` verb on it, or by someone who holds every permission it grants
  (in its namespace, for a Role); an ``aggregationRule`` needs all of them
  (``*`` on everything); updates that only change what the garbage collector
  changes (owner references, finalizers) are not checked;
- a RoleBinding or ClusterRoleBinding may be written by someone allowed the
  ``bind`` verb on the role it names, or by someone who holds every
  permission of that role (a missing role is a 404).

A refusal is Kubernetes' 403::

    roles.rbac.authorization.k8s.io "pod-maker" is forbidden: user "jane" (groups=["system:authenticated"])
    is attempting to grant RBAC permissions not currently held:
    {APIGroups:[""], Resources:["pods"], Verbs:["create"]}

Decisions over the authorizer and the RBAC rule resolver (which read the
watch caches); the role a binding names is read from etcd, as kube-apiserver
reads it through its registry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from apiserver import errors
from apiserver.admission import UserInfo
from apiserver.authorization.authorizer import ALLOW, SYSTEM_MASTERS, Attributes
from apiserver.authorization.rules import ALL, Rule, describe_missing, uncovered
from machinery.api import kinds
from machinery.api.kinds import ResourceInfo

if TYPE_CHECKING:
    from apiserver.registry.store import StoreContext

Obj = dict[str, Any]
GROUP: Final = "rbac.authorization.k8s.io"
FULL_AUTHORITY: Final = (Rule((ALL,), (ALL,), (ALL,)), Rule((ALL,), non_resource_urls=(ALL,)))


def escalation_allowed(user: UserInfo) -> bool:
    return SYSTEM_MASTERS in user.groups


def _allowed(ctx: StoreContext, attrs: Attributes) -> bool:
    return ctx.authorizer.authorize(attrs)[0] is ALLOW


def _go_strings(values: Sequence[str]) -> str:
    return "[" + " ".join('"' + v.replace('"', '\\"') + '"' for v in values) + "]"


def confirm_no_escalation(ctx: StoreContext, user: UserInfo, rules: Sequence[Rule], namespace: str) -> str | None:
    """Why ``user`` may not grant ``rules`` in ``namespace`` (None when they hold them all)."""
    held = ctx.rule_resolver.rules_for(user, namespace)
    missing = uncovered([*held.resource, *held.non_resource], rules)
    if not missing:
        return None
    message = (f'user "{user.name}" (groups={_go_strings(user.groups)}) is attempting to grant RBAC permissions '
               f"not currently held:\n{describe_missing(missing)}")
    if held.errors:
        message += f"; resolution errors: [{', '.join(held.errors)}]"
    return message


def only_gc_fields_changed(new: Obj, old: Obj) -> bool:
    """``IsOnlyMutatingGCFields``: the update touches only owner references and finalizers."""
    def strip(obj: Obj) -> Obj:
        meta = {k: v for k, v in (obj.get("metadata") or {}).items()
                if k not in ("ownerReferences", "finalizers", "managedFields", "resourceVersion")}
        return {**obj, "metadata": meta}
    return strip(new) == strip(old)


def check_role(ctx: StoreContext, user: UserInfo, info: ResourceInfo[Any], obj: Obj, old: Obj | None) -> None:
    """A Role's or ClusterRole's create or update."""
    if escalation_allowed(user):
        return
    if old is not None and only_gc_fields_changed(obj, old):
        return
    meta = obj.get("metadata") or {}
    namespace = (meta.get("namespace") or "") if info.namespaced else ""
    name = meta.get("name") or ""
    # ``escalate`` is asked about the request's name, as RoleEscalationAuthorized does: a create (a POST to
    # the collection) has none, so a rule restricted by resourceNames lets a user widen only existing roles.
    if _allowed(ctx, Attributes(user, "escalate", namespace=namespace, api_group=GROUP, resource=info.plural,
                                name=name if old is not None else "")):
        return
    rules = [Rule.from_dict(r) for r in obj.get("rules") or () if isinstance(r, dict)]
    why = confirm_no_escalation(ctx, user, rules, namespace)
    if why is not None:
        raise errors.forbidden(info, name, why)
    if obj.get("aggregationRule") is not None and confirm_no_escalation(ctx, user, FULL_AUTHORITY, namespace):
        raise errors.forbidden(info, name, "must have cluster-admin privileges to use the aggregationRule")


async def _role_ref_rules(ctx: StoreContext, ref: Obj, namespace: str) -> list[Rule]:
    """The rules of the role a binding names, read from etcd (a role created a moment ago counts), or 404."""
    kind, name = ref.get("kind"), ref.get("name") or ""
    info: ResourceInfo[Any]
    if kind == "ClusterRole":
        info, ns = kinds.CLUSTER_ROLES, None
    elif kind == "Role":
        info, ns = kinds.ROLES, namespace
    else:
        return []
    entry = await ctx.store(info).get(ns, name)
    return [Rule.from_dict(r) for r in entry.obj.get("rules") or () if isinstance(r, dict)]


async def check_binding(ctx: StoreContext, user: UserInfo, info: ResourceInfo[Any], obj: Obj,
                        old: Obj | None) -> None:
    """A RoleBinding's or ClusterRoleBinding's create or update."""
    if escalation_allowed(user):
        return
    if old is not None and only_gc_fields_changed(obj, old):
        return
    meta = obj.get("metadata") or {}
    namespace = (meta.get("namespace") or "") if info.namespaced else ""
    ref = obj.get("roleRef") or {}
    resource = {"ClusterRole": "clusterroles", "Role": "roles"}.get(ref.get("kind") or "")
    if resource is not None and _allowed(ctx, Attributes(user, "bind", namespace=namespace,
                                                         api_group=ref.get("apiGroup") or GROUP,
                                                         resource=resource, name=ref.get("name") or "")):
        return
    why = confirm_no_escalation(ctx, user, await _role_ref_rules(ctx, ref, namespace), namespace)
    if why is not None:
        raise errors.forbidden(info, meta.get("name") or "", why)
