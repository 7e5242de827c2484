"""What a container sees of its Pod's volumes and environment, computed as the kubelet computes them.

Both runtimes need it: the simulated one shows these files and variables to
its built-in shell (``kubectl exec POD -- cat /etc/config/key``), the process
runtime writes the files under its root directory and runs commands with the
variables.

- :func:`volume_files`: the files of each volume (``configMap``, ``secret``,
  ``projected``, ``downwardAPI``; ``emptyDir`` and the rest start empty), with
  ``items``, ``defaultMode`` and ``optional`` as the kubelet's volume plugins
  apply them. A missing ConfigMap or Secret that is not optional is an error
  with the kubelet's message (``configmap "x" not found``). A projected
  ``serviceAccountToken`` is a TokenRequest the kubelet makes for the Pod's
  ServiceAccount, bound to the Pod (so it stops working when the Pod goes),
  with the source's audience and expiration, in the volume's mode like every
  projected file; one it cannot get fails the mount
  (``failed to fetch token: ...``);
- :func:`container_environment`: ``env`` and ``envFrom`` in the kubelet's
  order (``makeEnvironmentVariables``): ``envFrom`` first, then ``env``, with
  ``$(VAR)`` references expanded, ``fieldRef`` and ``resourceFieldRef``
  resolved, plus the variables every container gets (``HOSTNAME``, ``PATH``,
  ``HOME``).

ConfigMaps and Secrets are read, and tokens requested, through the API with
:class:`ObjectSource` (one request per object or token per computation). Pure
otherwise; the Pod is wire JSON.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from machinery.api.quantity import milli_value

DEFAULT_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_MODE: Final = 0o644

#: volume name -> relative path -> (content, mode)
VolumeFiles = dict[str, dict[str, tuple[bytes, int]]]


class VolumeError(Exception):
    """The kubelet could not set up a volume or variable (its message)."""


class ObjectSource(Protocol):
    """Reads ConfigMaps and Secrets (wire JSON, or None when they do not exist) and requests tokens."""

    async def config_map(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def secret(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def service_account_token(self, namespace: str, service_account: str, pod: BoundPod,
                                    audience: str, expiration_seconds: int) -> str:
        """A token of ``service_account`` bound to ``pod`` (an empty ``audience``: the APIServer's own);
        raises :class:`VolumeError` with the reason when the APIServer gives none."""
        ...


@dataclass(frozen=True, slots=True)
class BoundPod:
    """The Pod a token is bound to, as a TokenRequest's ``boundObjectRef`` names it."""

    name: str
    uid: str


class CachingSource:
    """One read per object for one computation (a Pod may mention a ConfigMap many times)."""

    def __init__(self, source: ObjectSource) -> None:
        self._source = source
        self._cache: dict[tuple[str, str, str], dict[str, Any] | None] = {}

    async def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        key = ("cm", namespace, name)
        if key not in self._cache:
            self._cache[key] = await self._source.config_map(namespace, name)
        return self._cache[key]

    async def service_account_token(self, namespace: str, service_account: str, pod: BoundPod,
                                    audience: str, expiration_seconds: int) -> str:
        return await self._source.service_account_token(namespace, service_account, pod, audience,
                                                        expiration_seconds)

    async def secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        key = ("secret", namespace, name)
        if key not in self._cache:
            self._cache[key] = await self._source.secret(namespace, name)
        return self._cache[key]


def _config_map_data(cm: Mapping[str, Any]) -> dict[str, bytes]:
    data = {k: str(v).encode() for k, v in (cm.get("data") or {}).items()}
    for k, v in (cm.get("binaryData") or {}).items():
        try:
            data[k] = base64.b64decode(v)
        except (binascii.Error, ValueError):
            continue
    return data


def _secret_data(secret: Mapping[str, Any]) -> dict[str, bytes]:
    data: dict[str, bytes] = {}
    for k, v in (secret.get("data") or {}).items():
        try:
            data[k] = base64.b64decode(v)
        except (binascii.Error, ValueError):
            continue
    for k, v in (secret.get("stringData") or {}).items():
        data[k] = str(v).encode()
    return data


def _project(data: Mapping[str, bytes], items: list[dict[str, Any]] | None, mode: int, what: str,
             optional: bool) -> dict[str, tuple[bytes, int]]:
    """Keys to files: every key by its name, or only ``items`` at their paths and modes."""
    if not items:
        return {k: (v, mode) for k, v in data.items()}
    files: dict[str, tuple[bytes, int]] = {}
    for item in items:
        key, path = item.get("key", ""), item.get("path", "")
        if key not in data:
            if optional:
                continue
            raise VolumeError(f'configuration for {what} key "{key}" not found')
        files[path] = (data[key], int(item.get("mode") or mode))
    return files


def field_value(pod: Mapping[str, Any], path: str) -> str:
    """A downward-API ``fieldRef`` (``metadata.name``, ``metadata.labels['app']``, ``status.podIP``...)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    match = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
    if match:
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    simple = {
        "metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"), "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.hostIP": status.get("hostIP"), "status.podIP": status.get("podIP"),
        "status.hostIPs": ",".join(i.get("ip", "") for i in status.get("hostIPs") or ()),
        "status.podIPs": ",".join(i.get("ip", "") for i in status.get("podIPs") or ()),
    }
    if path in ("metadata.labels", "metadata.annotations"):
        values = meta.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{v}"' for k, v in sorted(values.items()))
    if path not in simple:
        raise VolumeError(f"unsupported fieldPath: {path}")
    return str(simple[path] or "")


def resource_value(container: Mapping[str, Any], ref: Mapping[str, Any], node_allocatable: Mapping[str, str]) -> str:
    """A ``resourceFieldRef``: the limit (else the node's allocatable) or request, in the divisor's units."""
    resource = str(ref.get("resource", ""))
    kind, _, name = resource.partition(".")
    resources = container.get("resources") or {}
    value = (resources.get(kind) or {}).get(name)
    if value is None and kind == "limits":
        value = node_allocatable.get(name)
    if value is None:
        return "0"
    divisor = milli_value(str(ref.get("divisor") or "1"))
    amount = milli_value(str(value))
    if divisor <= 0:
        raise VolumeError(f"invalid divisor for {resource}")
    # Kubernetes rounds up (``ExtractContainerResourceValue`` uses ceiling division).
    return str(-(-amount // divisor))


async def volume_files(pod: Mapping[str, Any], source: ObjectSource, *, strict: bool = True) -> VolumeFiles:
    """Every volume's files; emptyDir and the kinds kubesim does not fill are empty.

    With ``strict`` a volume that cannot be set up raises :class:`VolumeError` (the container could
    not start); without it that volume is left empty (a running container keeps what it had).
    """
    volumes: VolumeFiles = {}
    cached = CachingSource(source)
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        try:
            volumes[volume.get("name", "")] = await _volume(pod, volume, cached)
        except VolumeError:
            if strict:
                raise
            volumes[volume.get("name", "")] = {}
    return volumes


async def _volume(pod: Mapping[str, Any], volume: Mapping[str, Any],
                  cached: ObjectSource) -> dict[str, tuple[bytes, int]]:
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    files: dict[str, tuple[bytes, int]] = {}
    if "configMap" in volume:
        files = await _config_map_volume(namespace, volume["configMap"], cached,
                                         int(volume["configMap"].get("defaultMode") or DEFAULT_MODE))
    elif "secret" in volume:
        files = await _secret_volume(namespace, volume["secret"], cached,
                                     int(volume["secret"].get("defaultMode") or DEFAULT_MODE))
    elif "downwardAPI" in volume:
        files = _downward_volume(pod, volume["downwardAPI"],
                                 int(volume["downwardAPI"].get("defaultMode") or DEFAULT_MODE))
    elif "projected" in volume:
        projected = volume["projected"]
        mode = int(projected.get("defaultMode") or DEFAULT_MODE)
        for source_spec in projected.get("sources") or ():
            if "configMap" in source_spec:
                files.update(await _config_map_volume(namespace, source_spec["configMap"], cached, mode))
            elif "secret" in source_spec:
                files.update(await _secret_volume(namespace, source_spec["secret"], cached, mode))
            elif "downwardAPI" in source_spec:
                files.update(_downward_volume(pod, source_spec["downwardAPI"], mode))
            elif "serviceAccountToken" in source_spec:
                files.update(await _token_projection(pod, source_spec["serviceAccountToken"], cached, mode))
    return files


#: A projected token's lifetime when the source sets none (``serviceAccountToken.expirationSeconds``' default).
TOKEN_EXPIRATION_SECONDS: Final = 3600


async def _token_projection(pod: Mapping[str, Any], spec: Mapping[str, Any], source: ObjectSource,
                            mode: int) -> dict[str, tuple[bytes, int]]:
    """``serviceAccountToken``: a token of the Pod's ServiceAccount bound to the Pod, as the kubelet asks for it."""
    meta = pod.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
    token = await source.service_account_token(
        namespace, account, BoundPod(str(meta.get("name") or ""), str(meta.get("uid") or "")),
        str(spec.get("audience") or ""), int(spec.get("expirationSeconds") or TOKEN_EXPIRATION_SECONDS))
    return {str(spec.get("path") or "token"): (token.encode(), mode)}


async def _config_map_volume(namespace: str, spec: Mapping[str, Any], source: ObjectSource,
                             mode: int) -> dict[str, tuple[bytes, int]]:
    name = spec.get("name", "")
    optional = bool(spec.get("optional"))
    cm = await source.config_map(namespace, name)
    if cm is None:
        if optional:
            return {}
        raise VolumeError(f'configmap "{name}" not found')
    return _project(_config_map_data(cm), spec.get("items"), mode, f"configMap {namespace}/{name}", optional)


async def _secret_volume(namespace: str, spec: Mapping[str, Any], source: ObjectSource,
                         mode: int) -> dict[str, tuple[bytes, int]]:
    name = spec.get("secretName") or spec.get("name") or ""
    optional = bool(spec.get("optional"))
    secret = await source.secret(namespace, name)
    if secret is None:
        if optional:
            return {}
        raise VolumeError(f'secret "{name}" not found')
    return _project(_secret_data(secret), spec.get("items"), mode, f"secret {namespace}/{name}", optional)


def _downward_volume(pod: Mapping[str, Any], spec: Mapping[str, Any], mode: int) -> dict[str, tuple[bytes, int]]:
    files: dict[str, tuple[bytes, int]] = {}
    for item in spec.get("items") or ():
        if "fieldRef" in item:
            value = field_value(pod, item["fieldRef"].get("fieldPath", ""))
        elif "resourceFieldRef" in item:
            container: Mapping[str, Any] = next((c for c in (pod.get("spec") or {}).get("containers") or ()
                              if c.get("name") == item["resourceFieldRef"].get("containerName")), {})
            value = resource_value(container, item["resourceFieldRef"], {})
        else:
            continue
        files[item.get("path", "")] = (value.encode(), int(item.get("mode") or mode))
    return files


_REFERENCE: Final = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(value: str, env: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion: known names are replaced, ``$$`` is ``$``, the rest stays."""
    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env[name] if name in env else match.group(0)
    return _REFERENCE.sub(replace, value)


async def container_environment(pod: Mapping[str, Any], container: Mapping[str, Any], source: ObjectSource, *,
                                hostname: str, node_allocatable: Mapping[str, str] | None = None,
                                tty: bool = False) -> dict[str, str]:
    """The container's variables, in the order a process would see them."""
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    cached = CachingSource(source)
    env: dict[str, str] = {"PATH": DEFAULT_PATH, "HOSTNAME": hostname}
    if tty:
        env["TERM"] = "xterm"
    for env_from in container.get("envFrom") or ():
        prefix = env_from.get("prefix") or ""
        if "configMapRef" in env_from:
            ref = env_from["configMapRef"]
            cm = await cached.config_map(namespace, ref.get("name", ""))
            if cm is None:
                if not ref.get("optional"):
                    raise VolumeError(f'configmap "{ref.get("name", "")}" not found')
                continue
            env.update({prefix + k: v.decode("utf-8", "replace") for k, v in _config_map_data(cm).items()})
        elif "secretRef" in env_from:
            ref = env_from["secretRef"]
            secret = await cached.secret(namespace, ref.get("name", ""))
            if secret is None:
                if not ref.get("optional"):
                    raise VolumeError(f'secret "{ref.get("name", "")}" not found')
                continue
            env.update({prefix + k: v.decode("utf-8", "replace") for k, v in _secret_data(secret).items()})
    for var in container.get("env") or ():
        name = var.get("name", "")
        if "valueFrom" not in var:
            env[name] = expand(str(var.get("value") or ""), env)
            continue
        source_spec = var["valueFrom"] or {}
        if "fieldRef" in source_spec:
            env[name] = field_value(pod, source_spec["fieldRef"].get("fieldPath", ""))
        elif "resourceFieldRef" in source_spec:
            env[name] = resource_value(container, source_spec["resourceFieldRef"], node_allocatable or {})
        elif "configMapKeyRef" in source_spec:
            ref = source_spec["configMapKeyRef"]
            cm = await cached.config_map(namespace, ref.get("name", ""))
            data = _config_map_data(cm) if cm is not None else None
            if data is None or ref.get("key") not in data:
                if ref.get("optional"):
                    continue
                if cm is None:
                    raise VolumeError(f'configmap "{ref.get("name", "")}" not found')
                raise VolumeError(f'couldn\'t find key {ref.get("key")} in ConfigMap {namespace}/{ref.get("name")}')
            env[name] = data[ref["key"]].decode("utf-8", "replace")
        elif "secretKeyRef" in source_spec:
            ref = source_spec["secretKeyRef"]
            secret = await cached.secret(namespace, ref.get("name", ""))
            data = _secret_data(secret) if secret is not None else None
            if data is None or ref.get("key") not in data:
                if ref.get("optional"):
                    continue
                if secret is None:
                    raise VolumeError(f'secret "{ref.get("name", "")}" not found')
                raise VolumeError(f'couldn\'t find key {ref.get("key")} in Secret {namespace}/{ref.get("name")}')
            env[name] = data[ref["key"]].decode("utf-8", "replace")
    env.setdefault("HOME", "/root")
    return env


def pod_hostname(pod: Mapping[str, Any]) -> str:
    """``spec.hostname`` or the Pod's name, cut to 63 characters as the kubelet does."""
    spec = pod.get("spec") or {}
    name = spec.get("hostname") or (pod.get("metadata") or {}).get("name") or ""
    return str(name)[:63].rstrip("-.")
