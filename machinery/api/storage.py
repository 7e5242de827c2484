"""Storage facts every component shares: kubesim's default StorageClass and its provisioner, and PV matching.

A fresh kubesim cluster has one StorageClass, ``standard``, marked default
(the APIServer's bootstrap makes it), whose provisioner ``kubesim.io/hostpath``
is the PersistentVolume binder's in-process one (as kind ships ``standard``
with a local-path provisioner). Classes of that provisioner that bind when the
first consumer is scheduled (``WaitForFirstConsumer``) get volumes pinned to
the chosen node by node affinity.

Also here: the annotations the binder, the scheduler and admission use to
talk about claims, and :func:`volume_matches_claim`, the matching rule of
``FindMatchingVolume`` (class, access modes, capacity, selector, volume mode),
which the binder and the scheduler's VolumeBinding plugin must agree on.

Pure data and functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from machinery.api.labels import Selector
from machinery.api.quantity import milli_value

DEFAULT_CLASS: Final = "standard"
PROVISIONER: Final = "kubesim.io/hostpath"
IS_DEFAULT_CLASS: Final = "storageclass.kubernetes.io/is-default-class"
BETA_IS_DEFAULT_CLASS: Final = "storageclass.beta.kubernetes.io/is-default-class"
SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
STORAGE_PROVISIONER: Final = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER: Final = "volume.beta.kubernetes.io/storage-provisioner"
PROVISIONED_BY: Final = "pv.kubernetes.io/provisioned-by"
BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"

def is_default_class(storage_class: Mapping[str, Any]) -> bool:
    annotations = (storage_class.get("metadata") or {}).get("annotations") or {}
    return annotations.get(IS_DEFAULT_CLASS) == "true" or annotations.get(BETA_IS_DEFAULT_CLASS) == "true"


def claim_class(claim: Mapping[str, Any]) -> str:
    spec: Mapping[str, Any] = claim.get("spec") or {}
    return str(spec.get("storageClassName") or "")


def volume_matches_claim(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """Whether an available PV can satisfy a claim (``checkVolumeSatisfyClaim`` and the selector)."""
    vspec: Mapping[str, Any] = volume.get("spec") or {}
    cspec: Mapping[str, Any] = claim.get("spec") or {}
    if (vspec.get("storageClassName") or "") != claim_class(claim):
        return False
    if (vspec.get("volumeMode") or "Filesystem") != (cspec.get("volumeMode") or "Filesystem"):
        return False
    if not set(cspec.get("accessModes") or ()) <= set(vspec.get("accessModes") or ()):
        return False
    want = milli_value(((cspec.get("resources") or {}).get("requests") or {}).get("storage", "0"))
    have = milli_value((vspec.get("capacity") or {}).get("storage", "0"))
    if have < want:
        return False
    selector = cspec.get("selector")
    if selector:
        labels = (volume.get("metadata") or {}).get("labels") or {}
        if not Selector.from_label_selector(selector).matches(labels):
            return False
    return True


def volume_capacity(volume: Mapping[str, Any]) -> int:
    return milli_value(((volume.get("spec") or {}).get("capacity") or {}).get("storage", "0"))
