"""ControllerRevisions: the history of a StatefulSet's or DaemonSet's Pod template.

Kubernetes' ``pkg/controller/history`` and the revision helpers of the
StatefulSet and DaemonSet controllers: a revision's ``data`` is the patch
that puts its template back (``{"spec": {"template": {..., "$patch":
"replace"}}}``); its name is ``<owner>-<hash>``, the hash an FNV-32a of that
data (and of ``collisionCount``) in ``SafeEncodeString``'s alphabet, also kept
in the ``controller.kubernetes.io/hash`` label. Two revisions are the same
when their data are; re-using an older one gives it the next revision number.

Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson
from kubernetes.client import V1ControllerRevision
from pydantic import BaseModel

from controller_manager.deploymentutil import SAFE_ALPHABET, fnv32a, pruned
from controller_manager.podcontrol import owner_reference
from machinery.api.kinds import CONTROLLER_REVISIONS, ResourceInfo
from machinery.client.objects import meta_of, to_wire

HASH_LABEL: Final = "controller.kubernetes.io/hash"
#: The label on Pods naming the revision they were made from.
POD_REVISION_LABEL: Final = "controller-revision-hash"


def template_patch(template: Any) -> dict[str, Any]:
    """A revision's data: the patch that restores ``template``."""
    wire: dict[str, Any] = pruned(to_wire(template) if template is not None else {})
    return {"spec": {"template": {**wire, "$patch": "replace"}}}


def template_of(revision: V1ControllerRevision) -> dict[str, Any]:
    """The template a revision holds (the inverse of :func:`template_patch`)."""
    data = revision.data if isinstance(revision.data, Mapping) else {}
    template = dict(((data.get("spec") or {}).get("template")) or {})
    template.pop("$patch", None)
    return template


def revision_hash(data: Mapping[str, Any], collision_count: int | None) -> str:
    raw = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    if collision_count:
        raw += collision_count.to_bytes(4, "little", signed=False)
    return "".join(SAFE_ALPHABET[ord(c) % len(SAFE_ALPHABET)] for c in str(fnv32a(raw)))


def new_revision(owner: BaseModel, resource: ResourceInfo[Any], template: Any, number: int,
                 collision_count: int | None, labels: Mapping[str, str]) -> dict[str, Any]:
    """The ControllerRevision to create for ``template``, in wire form."""
    data = template_patch(template)
    digest = revision_hash(data, collision_count)
    meta = meta_of(owner)
    return {"apiVersion": CONTROLLER_REVISIONS.api_version, "kind": CONTROLLER_REVISIONS.kind,
            "metadata": {"name": f"{meta.name}-{digest}", "namespace": meta.namespace,
                         "labels": {**labels, HASH_LABEL: digest},
                         "ownerReferences": [owner_reference(owner, resource)]},
            "data": data, "revision": number}


def same_data(revision: V1ControllerRevision, data: Mapping[str, Any]) -> bool:
    return bool(pruned(revision.data if isinstance(revision.data, Mapping) else {}) == pruned(dict(data)))


def sorted_revisions(revisions: Sequence[V1ControllerRevision]) -> list[V1ControllerRevision]:
    return sorted(revisions, key=lambda r: (r.revision or 0, meta_of(r).creation_timestamp is None,
                                            meta_of(r).name or ""))


def next_number(revisions: Sequence[V1ControllerRevision]) -> int:
    return max((r.revision or 0 for r in revisions), default=0) + 1
