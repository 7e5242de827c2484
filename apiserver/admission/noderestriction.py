"""NodeRestriction: a kubelet writes only its own Node, its own Lease, and the Pods bound to it.

Kubernetes' plugin (``plugin/pkg/admission/noderestriction``), for requests
from nodes (``system:node:<name>`` in ``system:nodes``; see the Node
authorizer, which lets every node try these writes):

- Pods: a node may create only mirror Pods bound to itself (annotation
  ``kubernetes.io/config.mirror``, a controller owner reference to its own Node,
  no ServiceAccount, Secret, ConfigMap or PVC), delete only Pods bound to it,
  update only the status of Pods bound to it (and not their labels);
- its Node: only its own, created without a config source, never changing its
  taints, and never setting or changing labels under ``node-restriction.kubernetes.io/``
  or other ``kubernetes.io``/``k8s.io`` labels than the kubelet's own;
- PVCs: only their status; TokenRequests: only bound to a Pod (with its uid)
  running on the node; Leases: only ``kube-node-lease/<node>``; CSINodes: its own.

Every refusal is a 403 with Kubernetes' message
(``nodes "node-2" is forbidden: node "node-1" is not allowed to modify node "node-2"``).
Objects are read from the watch caches. Runs in the mutating phase, as there.
"""

from __future__ import annotations

from typing import Any, Final

from apiserver import errors
from apiserver.admission.chain import Attributes, Plugin
from machinery.api import kinds
from machinery.api.podrefs import pod_config_maps, pod_secrets

Obj = dict[str, Any]
MIRROR_POD_ANNOTATION: Final = "kubernetes.io/config.mirror"
NODES_GROUP: Final = "system:nodes"
NODE_USER_PREFIX: Final = "system:node:"
LABEL_NAMESPACE_NODE_RESTRICTION: Final = "node-restriction.kubernetes.io"
#: The labels a kubelet may set on its own Node (``kubeletapis.IsKubeletLabel``).
KUBELET_LABELS: Final = frozenset({
    "kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type", "kubernetes.io/os",
    "kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
})
KUBELET_LABEL_NAMESPACES: Final = ("kubelet.kubernetes.io", "node.kubernetes.io")


def _label_namespace(key: str) -> str:
    prefix, sep, _ = key.partition("/")
    return prefix if sep else ""


def _is_kubernetes_label(key: str) -> bool:
    ns = _label_namespace(key)
    return ns in ("kubernetes.io", "k8s.io") or ns.endswith((".kubernetes.io", ".k8s.io"))


def _is_kubelet_label(key: str) -> bool:
    if key in KUBELET_LABELS:
        return True
    ns = _label_namespace(key)
    return any(ns == allowed or ns.endswith("." + allowed) for allowed in KUBELET_LABEL_NAMESPACES)


def forbidden_labels(new: dict[str, str], old: dict[str, str]) -> list[str]:
    """The labels added, removed or changed that a kubelet may not touch, sorted."""
    modified = {k for k in new if old.get(k) != new[k]} | {k for k in old if new.get(k) != old[k]}
    out = set()
    for key in modified:
        ns = _label_namespace(key)
        if ns == LABEL_NAMESPACE_NODE_RESTRICTION or ns.endswith("." + LABEL_NAMESPACE_NODE_RESTRICTION):
            out.add(key)
        if _is_kubernetes_label(key) and not _is_kubelet_label(key):
            out.add(key)
    return sorted(out)


def _labels(obj: Obj | None) -> dict[str, str]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


class NodeRestriction(Plugin):
    name = "NodeRestriction"
    operations = frozenset({"CREATE", "UPDATE", "DELETE"})

    def handles(self, attrs: Attributes) -> bool:
        return super().handles(attrs) and attrs.user.name.startswith(NODE_USER_PREFIX) and \
            NODES_GROUP in attrs.user.groups

    def _refuse(self, attrs: Attributes, why: str) -> errors.APIError:
        name = attrs.name or ((attrs.object or {}).get("metadata") or {}).get("name") or ""
        return errors.forbidden(attrs.resource, name, why)

    async def admit(self, attrs: Attributes) -> None:
        node = attrs.user.name[len(NODE_USER_PREFIX):]
        if not node:
            raise self._refuse(attrs, f'could not determine node from user "{attrs.user.name}"')
        resource = attrs.resource
        if resource is kinds.PODS:
            if attrs.subresource == "":
                await self._pod(node, attrs)
            elif attrs.subresource == "status":
                self._pod_status(node, attrs)
            elif attrs.subresource == "eviction":
                await self._pod_bound(node, attrs, "evict")
            else:
                raise self._refuse(attrs, f'unexpected pod subresource "{attrs.subresource}", only \'status\' '
                                          "and 'eviction' are allowed")
        elif resource is kinds.NODES:
            self._node(node, attrs)
        elif resource is kinds.PERSISTENT_VOLUME_CLAIMS:
            self._pvc(node, attrs)
        elif resource is kinds.SERVICE_ACCOUNTS:
            await self._token(node, attrs)
        elif resource is kinds.LEASES:
            self._lease(node, attrs)
        elif resource.group == "storage.k8s.io" and resource.plural == "csinodes":
            self._own_name(node, attrs, "can only access CSINode with the same name as the requesting node")

    # --- pods -------------------------------------------------------------------------------

    async def _pod(self, node: str, attrs: Attributes) -> None:
        if attrs.operation == "CREATE":
            await self._mirror_pod(node, attrs)
        elif attrs.operation == "DELETE":
            await self._pod_bound(node, attrs, "delete")
        else:
            raise self._refuse(attrs, f'unexpected operation "{attrs.operation}", node "{node}" can only create '
                                      "and delete mirror pods")

    async def _pod_bound(self, node: str, attrs: Attributes, verb: str) -> None:
        pod = attrs.old_object if attrs.old_object is not None else await self._current_pod(attrs)
        if ((pod or {}).get("spec") or {}).get("nodeName") != node:
            if verb == "evict":
                raise self._refuse(attrs, f"node {node} can only evict pods with spec.nodeName set to itself")
            raise self._refuse(attrs, f'node "{node}" can only delete pods with spec.nodeName set to itself')

    async def _current_pod(self, attrs: Attributes) -> Obj | None:
        entry = await attrs.context.store(kinds.PODS).lookup(attrs.namespace, attrs.name)
        if entry is None:
            raise errors.not_found(kinds.PODS, attrs.name)
        return entry.obj

    async def _mirror_pod(self, node: str, attrs: Attributes) -> None:
        pod = attrs.object or {}
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        if MIRROR_POD_ANNOTATION not in (meta.get("annotations") or {}):
            raise self._refuse(attrs, f'pod does not have "{MIRROR_POD_ANNOTATION}" annotation, node "{node}" can '
                                      "only create mirror pods")
        if spec.get("nodeName") != node:
            raise self._refuse(attrs, f'node "{node}" can only create pods with spec.nodeName set to itself')
        owners = meta.get("ownerReferences") or []
        if len(owners) > 1:
            raise self._refuse(attrs, f'node "{node}" can only create pods with a single owner reference set to '
                                      "itself")
        if not owners:
            raise self._refuse(attrs, f'node "{node}" can only create pods with an owner reference set to itself')
        owner = owners[0]
        if owner.get("apiVersion") != "v1" or owner.get("kind") != "Node" or owner.get("name") != node:
            raise self._refuse(attrs, f'node "{node}" can only create pods with an owner reference set to itself')
        if not owner.get("controller"):
            raise self._refuse(attrs, f'node "{node}" can only create pods with a controller owner reference set '
                                      "to itself")
        if owner.get("blockOwnerDeletion"):
            raise self._refuse(attrs, f'node "{node}" must not set blockOwnerDeletion on an owner reference')
        node_entry = await attrs.context.store(kinds.NODES).lookup(None, node)
        if node_entry is None:
            raise errors.not_found(kinds.NODES, node)
        node_uid = (node_entry.obj.get("metadata") or {}).get("uid")
        if owner.get("uid") != node_uid:
            raise self._refuse(attrs, f"node {node} UID mismatch: expected {owner.get('uid')} got {node_uid}")
        if spec.get("serviceAccountName"):
            raise self._refuse(attrs, f'node "{node}" can not create pods that reference a service account')
        if pod_secrets(pod):
            raise self._refuse(attrs, f'node "{node}" can not create pods that reference secrets')
        if pod_config_maps(pod):
            raise self._refuse(attrs, f'node "{node}" can not create pods that reference configmaps')
        for vol in spec.get("volumes") or ():
            for source in (vol.get("projected") or {}).get("sources") or ():
                if source.get("clusterTrustBundle") is not None:
                    raise self._refuse(attrs, f'node "{node}" can not create pods that reference '
                                              "clustertrustbundles")
        if any(vol.get("persistentVolumeClaim") is not None for vol in spec.get("volumes") or ()):
            raise self._refuse(attrs, f'node "{node}" can not create pods that reference persistentvolumeclaims')

    def _pod_status(self, node: str, attrs: Attributes) -> None:
        if attrs.operation != "UPDATE":
            raise self._refuse(attrs, f'unexpected operation "{attrs.operation}"')
        if ((attrs.old_object or {}).get("spec") or {}).get("nodeName") != node:
            raise self._refuse(attrs, f'node "{node}" can only update pod status for pods with spec.nodeName set '
                                      "to itself")
        if _labels(attrs.old_object) != _labels(attrs.object):
            raise self._refuse(attrs, f'node "{node}" cannot update labels through pod status')

    # --- its node ----------------------------------------------------------------------------

    def _node(self, node: str, attrs: Attributes) -> None:
        requested = attrs.name or ((attrs.object or {}).get("metadata") or {}).get("name") or ""
        if requested != node:
            raise self._refuse(attrs, f'node "{node}" is not allowed to modify node "{requested}"')
        new = attrs.object or {}
        if attrs.operation == "CREATE":
            if (new.get("spec") or {}).get("configSource") is not None:
                raise self._refuse(attrs, f'node "{node}" is not allowed to create pods with a non-nil '
                                          "configSource")
            labels = forbidden_labels(_labels(new), {})
            if labels:
                raise self._refuse(attrs, f'node "{node}" is not allowed to set the following labels: '
                                          f"{', '.join(labels)}")
        elif attrs.operation == "UPDATE":
            old = attrs.old_object or {}
            source = (new.get("spec") or {}).get("configSource")
            if source is not None and source != (old.get("spec") or {}).get("configSource"):
                raise self._refuse(attrs, f'node "{node}" is not allowed to update configSource to a new non-nil '
                                          "configSource")
            if ((new.get("spec") or {}).get("taints") or []) != ((old.get("spec") or {}).get("taints") or []):
                raise self._refuse(attrs, f'node "{node}" is not allowed to modify taints')
            labels = forbidden_labels(_labels(new), _labels(old))
            if labels:
                raise self._refuse(attrs, f"is not allowed to modify labels: {', '.join(labels)}")

    # --- the rest ------------------------------------------------------------------------------

    def _pvc(self, node: str, attrs: Attributes) -> None:
        if attrs.subresource != "status":
            raise self._refuse(attrs, "may only update PVC status")
        if attrs.operation != "UPDATE":
            raise self._refuse(attrs, f'unexpected operation "{attrs.operation}"')

        def comparable(obj: Obj | None) -> Obj:
            obj = dict(obj or {})
            obj["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items()
                               if k not in ("resourceVersion", "managedFields")}
            obj["status"] = {k: v for k, v in (obj.get("status") or {}).items()
                             if k not in ("capacity", "conditions", "allocatedResourceStatuses",
                                          "allocatedResources")}
            return obj
        if comparable(attrs.object) != comparable(attrs.old_object):
            raise self._refuse(attrs, f'node "{node}" is not allowed to update fields other than status.capacity '
                                      "and status.conditions")

    async def _token(self, node: str, attrs: Attributes) -> None:
        if attrs.operation != "CREATE" or attrs.subresource != "token":
            return
        ref = ((attrs.object or {}).get("spec") or {}).get("boundObjectRef") or {}
        if ref.get("apiVersion") != "v1" or ref.get("kind") != "Pod" or not ref.get("name"):
            raise self._refuse(attrs, "node requested token not bound to a pod")
        if not ref.get("uid"):
            raise self._refuse(attrs, "node requested token with a pod binding without a uid")
        entry = await attrs.context.store(kinds.PODS).lookup(attrs.namespace, ref["name"])
        if entry is None:
            raise errors.not_found(kinds.PODS, ref["name"])
        pod = entry.obj
        if ref["uid"] != (pod.get("metadata") or {}).get("uid"):
            raise self._refuse(attrs, f"the UID in the bound object reference ({ref['uid']}) does not match the UID "
                                      "in record. The object might have been deleted and then recreated")
        if (pod.get("spec") or {}).get("nodeName") != node:
            raise self._refuse(attrs, "node requested token bound to a pod scheduled on a different node")

    def _lease(self, node: str, attrs: Attributes) -> None:
        if attrs.namespace != "kube-node-lease":
            raise self._refuse(attrs, 'can only access leases in the "kube-node-lease" system namespace')
        self._own_name(node, attrs, "can only access node lease with the same name as the requesting node")

    def _own_name(self, node: str, attrs: Attributes, why: str) -> None:
        name = ((attrs.object or {}).get("metadata") or {}).get("name") if attrs.operation == "CREATE" \
            else attrs.name
        if name != node:
            raise self._refuse(attrs, why)
