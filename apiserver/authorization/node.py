"""The Node authorizer: a kubelet (``system:node:<name>`` in ``system:nodes``) reads only what its Pods use.

As kube-apiserver's Node authorizer:

- requests from users that are not nodes get no opinion (RBAC decides);
- a node may ``get``, ``list`` and ``watch`` (by name) a Secret or ConfigMap,
  and ``get`` a PersistentVolumeClaim, PersistentVolume or VolumeAttachment,
  only when a path leads from it to the node: node <- pod <- secret /
  configmap / pvc, node <- pod <- pvc <- pv (<- secret), node <- volumeattachment;
  it may update only the status of such a PVC, and create tokens only for the
  ServiceAccounts of its Pods;
- its Lease is ``kube-node-lease/<its name>`` and nothing else; its CSINode its own;
- everything else is granted to every node alike by the ``system:node`` rules
  (:data:`~apiserver.registry.rbac.bootstrappolicy.NODE_RULES`), whose writes
  NodeRestriction admission then narrows to the node's own objects.

Kubernetes keeps a graph of these edges, updated from informers; kubesim
computes the same edges on demand from the Pods cache, looking only at the
Pods bound to the node in the object's namespace (their node name is a field
the cache already keeps). Reasons are Kubernetes' (``no relationship found
between node 'node-1' and this object``). kubesim answers as Kubernetes 1.32
does with ``AuthorizeNodeWithSelectors`` off: nodes may list and watch Pods
and Nodes without a field selector, which kubelet_sim's one watch for all of
its nodes needs.

Concurrency: synchronous reads of the watch caches, on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

import orjson

from apiserver.admission import UserInfo
from apiserver.authorization.authorizer import ALLOW, NO_OPINION, Attributes, Decision, Rules
from apiserver.authorization.rules import Rule
from apiserver.registry.rbac.bootstrappolicy import NODE_RULES
from machinery.api import kinds
from machinery.api.podrefs import pod_claims, pod_config_maps, pod_secrets, pod_service_account

if TYPE_CHECKING:
    from apiserver.watchcache import WatchCache

Obj = dict[str, Any]
CacheOf = Callable[[kinds.ResourceInfo[Any]], "WatchCache | None"]

NODES_GROUP: Final = "system:nodes"
NODE_USER_PREFIX: Final = "system:node:"
NODE_LEASE_NAMESPACE: Final = "kube-node-lease"
_RULES: Final = tuple(Rule.from_dict(r) for r in NODE_RULES)
_READ_VERBS: Final = frozenset({"get", "list", "watch"})
_LEASE_VERBS: Final = frozenset({"get", "create", "update", "patch", "delete"})


def node_identity(user: UserInfo) -> tuple[bool, str]:
    """(is a node, its name): ``NodeIdentifier``: ``system:node:<name>`` in ``system:nodes`` (the name may be empty)."""
    if not user.name.startswith(NODE_USER_PREFIX) or NODES_GROUP not in user.groups:
        return False, ""
    return True, user.name[len(NODE_USER_PREFIX):]


def _no_relationship(node: str) -> tuple[Decision, str]:
    return NO_OPINION, f"no relationship found between node '{node}' and this object"


class NodeAuthorizer:
    """``--authorization-mode=Node``."""

    def __init__(self, cache_of: CacheOf) -> None:
        self._cache_of = cache_of

    # --- the graph, computed from the caches ------------------------------------------------

    def _pods_on(self, node: str, namespace: str) -> Iterator[Obj]:
        cache = self._cache_of(kinds.PODS)
        if cache is None:
            return
        extractor = cache.field_extractor
        for entry in cache.sorted_entries(namespace):
            if extractor is not None and entry.fields(extractor).get("spec.nodeName") != node:
                continue
            pod = orjson.loads(entry.raw)
            if (pod.get("spec") or {}).get("nodeName") == node:
                yield pod

    def _get(self, info: kinds.ResourceInfo[Any], namespace: str, name: str) -> Obj | None:
        cache = self._cache_of(info)
        if cache is None:
            return None
        entry = cache.get(info.etcd_key(namespace or None, name))
        return orjson.loads(entry.raw) if entry is not None else None

    def _claims_of_node(self, node: str, namespace: str) -> set[str]:
        return {claim for pod in self._pods_on(node, namespace) for claim in pod_claims(pod)}

    def _volumes_of_node(self, node: str) -> set[str]:
        """The PersistentVolumes bound to the PVCs of the node's Pods, in every namespace."""
        cache = self._cache_of(kinds.PODS)
        if cache is None:
            return set()
        # Pods' keys are /registry/pods/<namespace>/<name>.
        skip = len(kinds.PODS.etcd_prefix())
        namespaces = {entry.key[skip:].split("/", 1)[0] for entry in cache.state.values()
                      if cache.field_extractor is None or entry.fields(cache.field_extractor).get("spec.nodeName")
                      == node}
        volumes = set()
        for ns in namespaces:
            for claim in self._claims_of_node(node, ns):
                pvc = self._get(kinds.PERSISTENT_VOLUME_CLAIMS, ns, claim)
                volume = ((pvc or {}).get("spec") or {}).get("volumeName")
                if volume:
                    volumes.add(volume)
        return volumes

    def _has_path(self, node: str, resource: str, namespace: str, name: str) -> bool:
        if resource == "secrets":
            if any(name in pod_secrets(pod) for pod in self._pods_on(node, namespace)):
                return True
            # node <- pod <- pvc <- pv <- secret
            for volume in self._volumes_of_node(node):
                pv = self._get(kinds.PERSISTENT_VOLUMES, "", volume) or {}
                for value in (pv.get("spec") or {}).values():
                    if isinstance(value, dict):
                        for key in ("secretRef", "nodePublishSecretRef", "controllerPublishSecretRef",
                                    "nodeStageSecretRef", "nodeExpandSecretRef"):
                            ref = value.get(key)
                            if isinstance(ref, dict) and ref.get("name") == name and \
                                    (ref.get("namespace") or namespace) == namespace:
                                return True
            return False
        if resource == "configmaps":
            return any(name in pod_config_maps(pod) for pod in self._pods_on(node, namespace))
        if resource == "persistentvolumeclaims":
            return name in self._claims_of_node(node, namespace)
        if resource == "persistentvolumes":
            return name in self._volumes_of_node(node)
        if resource == "serviceaccounts":
            return any(pod_service_account(pod) == name for pod in self._pods_on(node, namespace))
        if resource == "volumeattachments":
            va = self._get(kinds.builtin("storage.k8s.io", "v1", "volumeattachments"), "", name) or {}
            return (va.get("spec") or {}).get("nodeName") == node
        return False

    # --- the decision ----------------------------------------------------------------------

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        is_node, node = node_identity(attrs.user)
        if not is_node:
            return NO_OPINION, ""
        if not node:
            return NO_OPINION, f'unknown node for user "{attrs.user.name}"'
        if attrs.resource_request:
            decided = self._subdivided(node, attrs)
            if decided is not None:
                return decided
        for rule in _RULES:
            if attrs.resource_request:
                if rule.allows_resource(attrs.verb, attrs.api_group, attrs.resource, attrs.subresource, attrs.name):
                    return ALLOW, ""
            elif rule.allows_path(attrs.verb, attrs.path):
                return ALLOW, ""
        return NO_OPINION, ""

    def _subdivided(self, node: str, attrs: Attributes) -> tuple[Decision, str] | None:
        group, resource, verb, sub = attrs.api_group, attrs.resource, attrs.verb, attrs.subresource
        if group == "" and resource in ("secrets", "configmaps"):
            if verb not in _READ_VERBS:
                return NO_OPINION, "can only read resources of this type"
            if sub:
                return NO_OPINION, "cannot read subresource"
            if not attrs.namespace:
                return NO_OPINION, "can only read namespaced object of this type"
            return self._related(node, attrs)
        if group == "" and resource == "persistentvolumeclaims":
            if sub == "status":
                if verb not in ("update", "patch"):
                    return NO_OPINION, "can only get/update/patch this type"
                return self._related(node, attrs)
            return self._get_only(node, attrs)
        if (group == "" and resource == "persistentvolumes") or \
                (group == "storage.k8s.io" and resource == "volumeattachments"):
            return self._get_only(node, attrs)
        if group == "" and resource == "serviceaccounts":
            if verb != "create" or not attrs.name:
                return NO_OPINION, "can only create tokens for individual service accounts"
            if sub != "token":
                return NO_OPINION, "can only create token subresource of serviceaccount"
            return self._related(node, attrs)
        if group == "coordination.k8s.io" and resource == "leases":
            if verb not in _LEASE_VERBS:
                return NO_OPINION, "can only get, create, update, patch, or delete a node lease"
            if attrs.namespace != NODE_LEASE_NAMESPACE:
                return NO_OPINION, f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace'
            if verb != "create" and attrs.name != node:
                return NO_OPINION, "can only access node lease with the same name as the requesting node"
            return ALLOW, ""
        if group == "storage.k8s.io" and resource == "csinodes":
            if verb not in _LEASE_VERBS:
                return NO_OPINION, "can only get, create, update, patch, or delete a CSINode"
            if sub:
                return NO_OPINION, "cannot authorize CSINode subresources"
            if verb != "create" and attrs.name != node:
                return NO_OPINION, "can only access CSINode with the same name as the requesting node"
            return ALLOW, ""
        return None

    def _get_only(self, node: str, attrs: Attributes) -> tuple[Decision, str]:
        if attrs.verb != "get":
            return NO_OPINION, "can only get individual resources of this type"
        if attrs.subresource:
            return NO_OPINION, "cannot get subresource"
        return self._related(node, attrs)

    def _related(self, node: str, attrs: Attributes) -> tuple[Decision, str]:
        if not attrs.name:
            return NO_OPINION, "No Object name found"
        if self._has_path(node, attrs.resource, attrs.namespace, attrs.name):
            return ALLOW, ""
        return _no_relationship(node)

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        if node_identity(user)[0]:
            return Rules(incomplete=True, errors=["node authorizer does not support user rule resolution"])
        return Rules()
