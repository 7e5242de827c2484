"""ServiceAccount: every Pod runs as a ServiceAccount that exists, with its API credentials mounted.

As Kubernetes' ``plugin/pkg/admission/serviceaccount`` does on Pod CREATE:

- an empty ``spec.serviceAccountName`` becomes ``default``;
- the ServiceAccount must exist, else the Pod is refused (403 "error looking
  up service account ns/default: serviceaccount "default" not found"): this is
  why clients wait for the ServiceAccount controller to create ``default`` in
  a new namespace before they create Pods there;
- unless the ServiceAccount or the Pod sets ``automountServiceAccountToken:
  false``, or a container already mounts something at
  ``/var/run/secrets/kubernetes.io/serviceaccount``, the Pod gets the
  projected volume ``kube-api-access-<5 chars>`` (a bound token that expires
  after 3607 s, the ``kube-root-ca.crt`` ConfigMap's ``ca.crt``, and the
  namespace from the downward API) mounted read-only there in every
  container and init container. Signing the token is the kubelet's and the
  TokenRequest API's business, not admission's.

Mirror Pods (the kubelet's static Pods) are left alone. The ServiceAccount is
read from the watch cache, falling back to a read of the store when the
cache has not seen it yet.
"""

from __future__ import annotations

import secrets
from typing import Any, Final

from apiserver import errors
from apiserver.admission.chain import Attributes, Plugin
from machinery.api import kinds

DEFAULT_SERVICE_ACCOUNT: Final = "default"
MOUNT_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
VOLUME_PREFIX: Final = "kube-api-access-"
ROOT_CA_CONFIG_MAP: Final = "kube-root-ca.crt"
#: The token's lifetime as kube-apiserver requests it (an hour, plus the 7 s it adds so that it is not round).
TOKEN_EXPIRATION_SECONDS: Final = 3607
MIRROR_POD_ANNOTATION: Final = "kubernetes.io/config.mirror"
#: ``utilrand.String``'s alphabet, which generated names use.
_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"


class ServiceAccount(Plugin):
    name = "ServiceAccount"
    operations = frozenset({"CREATE"})

    def handles(self, attrs: Attributes) -> bool:
        return super().handles(attrs) and attrs.resource is kinds.PODS and not attrs.subresource

    async def admit(self, attrs: Attributes) -> None:
        pod = attrs.object
        if pod is None:
            return
        meta = pod.setdefault("metadata", {})
        spec = pod.setdefault("spec", {})
        # A malformed Pod is validation's to refuse, with a 422 naming the field.
        if not isinstance(meta, dict) or not isinstance(spec, dict) or not isinstance(spec.get("volumes", []), list):
            return
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and MIRROR_POD_ANNOTATION in annotations:
            return
        if not isinstance(spec.get("serviceAccountName", ""), str):
            return
        if not spec.get("serviceAccountName"):
            spec["serviceAccountName"] = DEFAULT_SERVICE_ACCOUNT
        account = await self._service_account(attrs, spec["serviceAccountName"])
        if _should_automount(account, spec):
            mount_token(spec)

    async def _service_account(self, attrs: Attributes, name: str) -> dict[str, Any]:
        namespace = attrs.namespace or ""
        store = attrs.context.store(kinds.SERVICE_ACCOUNTS)
        entry = await store.lookup(namespace, name)
        if entry is None:
            meta = (attrs.object or {}).get("metadata") or {}
            raise errors.forbidden(attrs.resource, meta.get("name") or meta.get("generateName") or "",
                                   f"error looking up service account {namespace}/{name}: "
                                   f'serviceaccount "{name}" not found')
        account: dict[str, Any] = entry.obj
        return account


def _should_automount(account: dict[str, Any], spec: dict[str, Any]) -> bool:
    """The Pod's ``automountServiceAccountToken`` wins over the ServiceAccount's; both default to true."""
    if spec.get("automountServiceAccountToken") is not None:
        return bool(spec["automountServiceAccountToken"])
    return account.get("automountServiceAccountToken") is not False


def mount_token(spec: dict[str, Any]) -> None:
    """Add the projected token volume and mount it in every container that mounts nothing there yet."""
    containers = [c for key in ("initContainers", "containers") if isinstance(spec.get(key) or [], list)
                  for c in spec.get(key) or () if isinstance(c, dict)]
    if any(not isinstance(c.get("volumeMounts", []), list) for c in containers):
        return
    if any(m.get("mountPath") == MOUNT_PATH for c in containers for m in c.get("volumeMounts") or ()
           if isinstance(m, dict)):
        return
    volumes = spec.setdefault("volumes", [])
    taken = {v.get("name") for v in volumes if isinstance(v, dict)}
    name = _volume_name()
    while name in taken:
        name = _volume_name()
    volumes.append({"name": name, "projected": {"defaultMode": 0o644, "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
        {"configMap": {"name": ROOT_CA_CONFIG_MAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                      "fieldPath": "metadata.namespace"}}]}},
    ]}})
    for container in containers:
        container.setdefault("volumeMounts", []).append({"name": name, "readOnly": True, "mountPath": MOUNT_PATH})


def _volume_name() -> str:
    return VOLUME_PREFIX + "".join(secrets.choice(_ALPHABET) for _ in range(5))
