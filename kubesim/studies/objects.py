"""Objects as a study keeps them: what a client would write, nothing the server or the cluster's state adds.

One function, :func:`portable`, turns an object read from any cluster into
the form snapshots and traces hold:

- **server-set metadata** goes: ``uid``, ``resourceVersion``,
  ``creationTimestamp``, ``generation``, ``managedFields``, ``selfLink``,
  ``deletionTimestamp``, ``deletionGracePeriodSeconds``; an owner reference
  keeps its kind and name but not the owner's uid (the loader finds the new
  one); the annotation that asks kubelet_sim to adopt a Node goes too (the
  loader adds it again);
- **status** goes, since a cluster rebuilds it, except a Node's capacity,
  allocatable, images and conditions (type, status, reason, message: not
  their times), which *are* the node's shape;
- **Secrets' data** is never copied: every value becomes empty (a
  ``.dockerconfigjson`` becomes ``{}``), the annotations that hold a copy of
  the object as a client sent it (:data:`OBJECT_COPY_ANNOTATIONS`:
  ``kubectl apply``'s last-applied-configuration holds the data in clear) go,
  and the Secret is annotated :data:`DATA_REMOVED`;
- what the APIServer **generates from an object's uid** goes, since the uid
  changes on another cluster: a Job's selector and template labels
  (``batch.kubernetes.io/controller-uid``, ``job-name`` and their legacy
  spellings) unless ``spec.manualSelector``, as ``kubectl get -o yaml |
  kubectl create`` needs too (the APIServer refuses a Job created with an
  old uid's selector); the new Job gets its own;
- keys come in a stable order: ``apiVersion``, ``kind``, ``metadata``,
  ``spec`` first, everything below sorted, so the same objects always give
  the same bytes.

:data:`SKIPPED_BY_DEFAULT` names the kinds that are records of what
happened or that their controllers rebuild (Events, Leases, EndpointSlices,
ControllerRevisions), which snapshots and traces leave out unless asked.
:class:`ControlPlaneMade` tells the objects that every cluster's control
plane makes for itself without an owner reference to say so (the
``default/kubernetes`` Service and its endpoints, each namespace's
``kube-root-ca.crt``, the Endpoints of a Service with a selector): a
snapshot leaves them out, a load and a replay leave them to the target.

Pure functions over JSON values.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any, Final

from kubelet_sim.adopt import ADOPT_ANNOTATION

SERVER_SET_METADATA: Final = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
                              "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds")
#: Marks a Secret whose values a snapshot or trace emptied.
DATA_REMOVED: Final = "kubesim.io/data-removed"
#: Annotations that hold the whole object as a client wrote it (so a Secret's data, in clear).
OBJECT_COPY_ANNOTATIONS: Final = ("kubectl.kubernetes.io/last-applied-configuration",)
#: The labels the APIServer gives a Job's template (and so its Pods) unless ``spec.manualSelector``.
JOB_GENERATED_LABELS: Final = ("batch.kubernetes.io/controller-uid", "controller-uid", "batch.kubernetes.io/job-name",
                               "job-name")
_JOB_SELECTOR_LABEL: Final = "batch.kubernetes.io/controller-uid"
SKIPPED_BY_DEFAULT: Final = frozenset({"Event", "Event.events.k8s.io", "Lease.coordination.k8s.io",
                                       "EndpointSlice.discovery.k8s.io", "ControllerRevision.apps"})
_NODE_STATUS: Final = ("capacity", "allocatable", "conditions", "images")
_CONDITION_FIELDS: Final = ("type", "status", "reason", "message")
_FIRST: Final = ("apiVersion", "kind", "metadata", "spec")


def group_kind(obj: Mapping[str, Any]) -> str:
    """``Deployment.apps`` for ``apps/v1`` Deployments, ``Pod`` for core ones."""
    api_version = str(obj.get("apiVersion") or "")
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    kind = str(obj.get("kind") or "")
    return f"{kind}.{group}" if group else kind


def key_of(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    """(group kind, namespace, name): what identifies an object across clusters."""
    meta = obj.get("metadata") or {}
    return group_kind(obj), str(meta.get("namespace") or ""), str(meta.get("name") or "")


def portable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as a study keeps it (see the module docstring); ``obj`` is not changed."""
    out: dict[str, Any] = {k: v for k, v in obj.items() if k != "status"}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_SET_METADATA}
    owners = [{k: v for k, v in ref.items() if k != "uid"} for ref in meta.get("ownerReferences") or ()]
    if owners:
        meta["ownerReferences"] = owners
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != ADOPT_ANNOTATION}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    kind = group_kind(obj)
    status = obj.get("status")
    if kind == "Node" and isinstance(status, Mapping):
        kept = {k: status[k] for k in _NODE_STATUS if k in status}
        if "conditions" in kept:
            kept["conditions"] = [{k: c[k] for k in _CONDITION_FIELDS if k in c} for c in kept["conditions"]]
        if kept:
            out["status"] = kept
    if kind == "Secret":
        _empty_secret(out)
    elif kind == "Job.batch":
        _drop_generated_selector(out)
    return ordered(out)


def _drop_generated_selector(job: dict[str, Any]) -> None:
    spec = job.get("spec")
    if not isinstance(spec, Mapping) or spec.get("manualSelector"):
        return
    spec = job["spec"] = dict(spec)
    selector = dict(spec.get("selector") or {})
    match = {k: v for k, v in (selector.get("matchLabels") or {}).items() if k != _JOB_SELECTOR_LABEL}
    if match:
        selector["matchLabels"] = match
    else:
        selector.pop("matchLabels", None)
    if selector:
        spec["selector"] = selector
    else:
        spec.pop("selector", None)
    template = spec.get("template")
    if isinstance(template, Mapping):
        template_meta = dict(template.get("metadata") or {})
        labels = {k: v for k, v in (template_meta.get("labels") or {}).items() if k not in JOB_GENERATED_LABELS}
        if labels:
            template_meta["labels"] = labels
        else:
            template_meta.pop("labels", None)
        spec["template"] = {**template, "metadata": template_meta}


def _empty_secret(secret: dict[str, Any]) -> None:
    meta = secret["metadata"]
    annotations = dict(meta.get("annotations") or {})
    copies = [k for k in OBJECT_COPY_ANNOTATIONS if k in annotations]
    values = {**(secret.get("data") or {}), **(secret.pop("stringData", None) or {})}
    if not values and not copies:
        return
    for key in copies:
        del annotations[key]
    if values:
        empty = {k: "" for k in values}
        if secret.get("type") == "kubernetes.io/dockerconfigjson":
            empty[".dockerconfigjson"] = base64.b64encode(b"{}").decode()
        elif secret.get("type") == "kubernetes.io/dockercfg":
            empty[".dockercfg"] = base64.b64encode(b"{}").decode()
        secret["data"] = empty
    meta["annotations"] = {**annotations, DATA_REMOVED: "true"}


def ordered(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``apiVersion``, ``kind``, ``metadata``, ``spec`` first, the other keys and all nested keys sorted."""
    out: dict[str, Any] = {k: _sorted(obj[k]) for k in _FIRST if k in obj}
    out.update({k: _sorted(obj[k]) for k in sorted(obj) if k not in _FIRST})
    return out


def _sorted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


#: (namespace, name) of the Service that every APIServer makes for itself, with its Endpoints and EndpointSlice.
APISERVER_SERVICE: Final = ("default", "kubernetes")
#: The ConfigMap the root CA publisher keeps in every namespace (the cluster's own CA).
ROOT_CA_CONFIGMAP: Final = "kube-root-ca.crt"
_APISERVER_KINDS: Final = frozenset({"Service", "Endpoints", "EndpointSlice.discovery.k8s.io"})


class ControlPlaneMade:
    """Which objects a cluster's control plane makes itself, though no owner reference says so.

    The Endpoints controller writes the Endpoints of every Service that has a
    selector, so an Endpoints is the cluster's when its Service (seen through
    :meth:`see`) has one; once so judged, it stays the cluster's until it is
    gone (its deletion, after its Service's, is the controller's too).
    """

    def __init__(self) -> None:
        self._selectors: dict[tuple[str, str], bool] = {}
        self._judged: set[tuple[str, str, str]] = set()

    def see(self, obj: Mapping[str, Any], *, gone: bool = False) -> None:
        """Follow the Services (call it with every object, in order; ``gone`` for deletions)."""
        kind, namespace, name = key_of(obj)
        if kind == "Service":
            if gone:
                self._selectors.pop((namespace, name), None)
            else:
                self._selectors[(namespace, name)] = bool((obj.get("spec") or {}).get("selector"))

    def __call__(self, obj: Mapping[str, Any], *, gone: bool = False) -> bool:
        key = kind, namespace, name = key_of(obj)
        if kind in _APISERVER_KINDS and (namespace, name) == APISERVER_SERVICE:
            return True
        if kind == "ConfigMap" and name == ROOT_CA_CONFIGMAP:
            return True
        if kind != "Endpoints":
            return False
        made = key in self._judged or self._selectors.get((namespace, name), False)
        if gone:
            self._judged.discard(key)
        elif made:
            self._judged.add(key)
        return made

    @classmethod
    def among(cls, objects: Iterable[Mapping[str, Any]]) -> ControlPlaneMade:
        """The rule for a set of objects that exist together (a snapshot)."""
        rule = cls()
        for obj in objects:
            rule.see(obj)
        return rule


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The owner reference with ``controller: true``, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def owner_key(obj: Mapping[str, Any], ref: Mapping[str, Any], namespaced_owner: bool) -> tuple[str, str, str]:
    """The (group kind, namespace, name) an owner reference points to (owners share their dependent's namespace)."""
    namespace = str((obj.get("metadata") or {}).get("namespace") or "") if namespaced_owner else ""
    return group_kind({"apiVersion": ref.get("apiVersion"), "kind": ref.get("kind")}), namespace, str(ref.get("name"))
