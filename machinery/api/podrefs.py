"""What a Pod refers to by name: its Secrets, ConfigMaps, PersistentVolumeClaims and ServiceAccount.

Kubernetes' ``pkg/api/pod`` visitors (``VisitPodSecretNames``,
``VisitPodConfigmapNames``): image pull secrets, ``env`` and ``envFrom`` of
every container (init and ephemeral included), and volumes (``secret``,
``configMap``, ``projected`` sources, the ``secretRef`` of volume plugins,
``persistentVolumeClaim`` and the ``<pod>-<volume>`` claims of ephemeral
volumes). The Node authorizer reads them to know what a kubelet may read;
NodeRestriction to refuse mirror Pods that reference anything.

Pure functions over a Pod in wire form.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Obj = dict[str, Any]


def _pod_specs(pod: Obj) -> Iterator[Obj]:
    spec = pod.get("spec") or {}
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from (c for c in spec.get(key) or () if isinstance(c, dict))


def pod_secrets(pod: Obj) -> set[str]:
    """``VisitPodSecretNames``: image pull secrets, env and envFrom, and volumes' secret references."""
    spec = pod.get("spec") or {}
    names = {s.get("name") for s in spec.get("imagePullSecrets") or () if isinstance(s, dict)}
    for c in _pod_specs(pod):
        for env in c.get("env") or ():
            ref = ((env.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name")
            names.add(ref)
        for src in c.get("envFrom") or ():
            names.add((src.get("secretRef") or {}).get("name"))
    for vol in spec.get("volumes") or ():
        if not isinstance(vol, dict):
            continue
        names.add((vol.get("secret") or {}).get("secretName"))
        for source in (vol.get("projected") or {}).get("sources") or ():
            names.add((source.get("secret") or {}).get("name"))
        # Volume plugins that name a Secret (csi, cephfs, rbd, iscsi, flexVolume, azureFile, scaleIO...).
        for value in vol.values():
            if isinstance(value, dict):
                for key in ("secretRef", "nodePublishSecretRef"):
                    ref = value.get(key)
                    if isinstance(ref, dict):
                        names.add(ref.get("name"))
                if "secretName" in value and "shareName" in value:  # azureFile
                    names.add(value.get("secretName"))
    return {n for n in names if isinstance(n, str) and n}


def pod_config_maps(pod: Obj) -> set[str]:
    spec = pod.get("spec") or {}
    names: set[Any] = set()
    for c in _pod_specs(pod):
        for env in c.get("env") or ():
            names.add(((env.get("valueFrom") or {}).get("configMapKeyRef") or {}).get("name"))
        for src in c.get("envFrom") or ():
            names.add((src.get("configMapRef") or {}).get("name"))
    for vol in spec.get("volumes") or ():
        if not isinstance(vol, dict):
            continue
        names.add((vol.get("configMap") or {}).get("name"))
        for source in (vol.get("projected") or {}).get("sources") or ():
            names.add((source.get("configMap") or {}).get("name"))
    return {n for n in names if isinstance(n, str) and n}


def pod_claims(pod: Obj) -> set[str]:
    """PVC names: ``persistentVolumeClaim`` volumes, and the ``<pod>-<volume>`` claims of ephemeral volumes."""
    spec = pod.get("spec") or {}
    pod_name = (pod.get("metadata") or {}).get("name") or ""
    names = set()
    for vol in spec.get("volumes") or ():
        if not isinstance(vol, dict):
            continue
        claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
        if claim:
            names.add(claim)
        if vol.get("ephemeral") is not None:
            names.add(f"{pod_name}-{vol.get('name')}")
    return names


def pod_service_account(pod: Obj) -> str:
    return (pod.get("spec") or {}).get("serviceAccountName") or "default"
