"""API discovery and ``/version``: what kubectl asks before anything else.

Before a ``kubectl get pods`` sends a single resource request, kubectl learns
the server's version and maps ``pods`` (or ``po``) to a group, version and
resource through discovery. This router serves both forms Kubernetes has:

- the legacy documents, ``/api`` (APIVersions), ``/apis`` (APIGroupList),
  ``/apis/<group>`` (APIGroup) and ``/api/v1``, ``/apis/<group>/<version>``
  (APIResourceList), which every kubectl accepts;
- aggregated discovery (``apidiscovery.k8s.io`` ``v2``, and ``v2beta1`` for
  kubectl 1.27 and 1.28), one document per root listing every resource, which
  kubectl asks for first through its Accept header.

Everything is derived from the APIServer's registry, so a registered resource
(a CustomResourceDefinition's too) is discovered without touching this file.
The documents are built on first use and kept until the registry changes
(:meth:`~apiserver.registry.registry.Registry.memo`); they are only read, so
requests may run concurrently.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import platform
import sys
from typing import Any, Final

import orjson
from fastapi import APIRouter, Request, Response

from apiserver import errors
from apiserver.negotiation import GroupVersionKind, negotiate
from apiserver.registry.registry import Registry
from machinery.api import schema
from machinery.api.kinds import ResourceInfo, Subresource

router = APIRouter(tags=["discovery"])

Json = dict[str, Any]

_DISCOVERY_GROUP: Final = "apidiscovery.k8s.io"
_AGGREGATED: Final = frozenset(
    GroupVersionKind(_DISCOVERY_GROUP, v, "APIGroupDiscoveryList") for v in ("v2", "v2beta1")
)
# Go's names for the machine architectures, as /version reports a platform.
_GOARCH: Final = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def _registry(request: Request) -> Registry:
    registry: Registry = request.app.state.server.registry
    return registry


def _json(content: Json, *, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(content), media_type="application/json", headers=headers)


# --- /version -----------------------------------------------------------------------------------


@functools.cache
def _version_info() -> Json:
    major, minor, _patch = schema.KUBERNETES_VERSION.removeprefix("v").split(".")
    machine = platform.machine().lower()
    return {
        "major": major,
        "minor": minor,
        "gitVersion": f"{schema.KUBERNETES_VERSION}+kubesim",
        # What a Kubernetes binary built without version stamping reports.
        "gitCommit": "$Format:%H$",
        "gitTreeState": "",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": f"python{platform.python_version()}",
        "compiler": platform.python_implementation().lower(),
        "platform": f"{sys.platform}/{_GOARCH.get(machine, machine)}",
    }


@router.get("/version")
async def get_version() -> Response:
    return _json(_version_info())


# --- Legacy documents ---------------------------------------------------------------------------


def _storage_version_hash(group: str, version: str, kind: str) -> str:
    """kube-apiserver's hash of a resource's storage group/version/kind: 8 bytes of SHA-256, base64."""
    return base64.b64encode(hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()[:8]).decode()


def _api_resource(ri: ResourceInfo[Any], *, stored: bool) -> Json:
    entry: Json = {"name": ri.plural, "singularName": ri.singular, "namespaced": ri.namespaced,
                   "kind": ri.kind, "verbs": sorted(ri.verbs)}
    if ri.short_names:
        entry["shortNames"] = list(ri.short_names)
    if ri.categories:
        entry["categories"] = list(ri.categories)
    if stored:
        # Only resources kept in etcd carry a storage version (reviews and bindings do not).
        entry["storageVersionHash"] = _storage_version_hash(ri.group, ri.version, ri.kind)
    return entry


def _api_subresource(ri: ResourceInfo[Any], sub: Subresource) -> Json:
    entry: Json = {"name": f"{ri.plural}/{sub.name}", "singularName": "", "namespaced": ri.namespaced}
    if sub.group or sub.version:
        entry["group"] = sub.group
        entry["version"] = sub.version
    entry["kind"] = sub.kind
    entry["verbs"] = sorted(sub.verbs)
    return entry


def _api_resources(registry: Registry, group: str, version: str) -> tuple[Json, ...]:
    """The APIResource entries of one group-version, sorted by name as Kubernetes sorts them."""
    def build() -> tuple[Json, ...]:
        entries: list[Json] = []
        for resource in registry.resources():
            ri = resource.info
            if (ri.group, ri.version) == (group, version):
                entries.append(_api_resource(ri, stored=resource.stored))
                entries.extend(_api_subresource(ri, sub) for sub in ri.subresources)
        return tuple(sorted(entries, key=lambda e: str(e["name"])))
    result: tuple[Json, ...] = registry.memo(("api-resources", group, version), build)
    return result


def _group_version(group: str, version: str) -> Json:
    return {"groupVersion": f"{group}/{version}", "version": version}


def _api_group(registry: Registry, group: str) -> Json:
    versions = [_group_version(g, v) for g, v in registry.group_versions() if g == group]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def _groups(registry: Registry) -> list[str]:
    return list(dict.fromkeys(g for g, _ in registry.group_versions() if g))


# --- Aggregated documents -----------------------------------------------------------------------


def _aggregated_version(registry: Registry, group: str, version: str) -> Json:
    """One APIVersionDiscovery, converted from the legacy list as kube-apiserver converts it."""
    resources: dict[str, Json] = {}
    for entry in _api_resources(registry, group, version):
        parent, _, sub = str(entry["name"]).partition("/")
        kind = {"group": entry.get("group", group), "version": entry.get("version", version),
                "kind": entry["kind"]}
        if sub:
            resources[parent].setdefault("subresources", []).append(
                {"subresource": sub, "responseKind": kind, "verbs": entry["verbs"]})
            continue
        resource: Json = {"resource": parent, "responseKind": kind,
                          "scope": "Namespaced" if entry["namespaced"] else "Cluster",
                          "singularResource": entry["singularName"], "verbs": entry["verbs"]}
        for key in ("shortNames", "categories"):
            if key in entry:
                resource[key] = entry[key]
        resources[parent] = resource
    return {"version": version, "resources": list(resources.values()), "freshness": "Current"}


def _aggregated(registry: Registry, core: bool, version: str) -> tuple[bytes, str]:
    """The APIGroupDiscoveryList of ``/api`` (core) or ``/apis``, in one apidiscovery version, and its hash."""
    def build() -> tuple[bytes, str]:
        items = []
        for name in ([""] if core else _groups(registry)):
            versions = [_aggregated_version(registry, g, v) for g, v in registry.group_versions() if g == name]
            # Go writes an unset creationTimestamp as null, and Kubernetes' discovery shows it.
            metadata: Json = {"name": name, "creationTimestamp": None} if name else {"creationTimestamp": None}
            items.append({"metadata": metadata, "versions": versions})
        body = orjson.dumps({"kind": "APIGroupDiscoveryList", "apiVersion": f"{_DISCOVERY_GROUP}/{version}",
                             "metadata": {}, "items": items})
        return body, hashlib.sha512(body).hexdigest().upper()
    result: tuple[bytes, str] = registry.memo(("aggregated", core, version), build)
    return result


def _discovery(request: Request, *, core: bool, legacy: Json) -> Response:
    """Answer a discovery root with the aggregated document when the Accept header asks for it."""
    chosen = negotiate(request.headers.get("accept"), subtypes=("json",), conversions=_AGGREGATED)
    if chosen is None:
        raise errors.not_acceptable(["application/json"])
    if chosen.convert is None:
        return _json(legacy, headers={"Vary": "Accept"})
    body, digest = _aggregated(_registry(request), core, chosen.convert.version)
    etag = f'"{digest}"'
    headers = {"ETag": etag, "Vary": "Accept", "Cache-Control": "public"}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    content_type = f"application/json;g={_DISCOVERY_GROUP};v={chosen.convert.version};as=APIGroupDiscoveryList"
    return Response(body, media_type=content_type, headers=headers)


@router.get("/api")
async def get_core_api_versions(request: Request) -> Response:
    # The address the client reached us at; Kubernetes reports its advertised address.
    legacy = {"kind": "APIVersions", "versions": [v for g, v in _registry(request).group_versions() if not g],
              "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": request.url.netloc}]}
    return _discovery(request, core=True, legacy=legacy)


@router.get("/apis")
async def get_api_groups(request: Request) -> Response:
    registry = _registry(request)
    legacy = {"kind": "APIGroupList", "apiVersion": "v1",
              "groups": [_api_group(registry, g) for g in _groups(registry)]}
    return _discovery(request, core=False, legacy=legacy)


@router.get("/api/{version}")
@router.get("/api/{version}/")
async def get_core_api_resources(version: str, request: Request) -> Response:
    registry = _registry(request)
    if not registry.serves("", version):
        raise errors.path_not_found()
    # Kubernetes writes the core group's lists without an apiVersion, as release 1.1 did.
    return _json({"kind": "APIResourceList", "groupVersion": version,
                  "resources": list(_api_resources(registry, "", version))})


@router.get("/apis/{group}")
@router.get("/apis/{group}/")
async def get_api_group(group: str, request: Request) -> Response:
    registry = _registry(request)
    if group not in _groups(registry):
        raise errors.path_not_found()
    return _json({"kind": "APIGroup", "apiVersion": "v1", **_api_group(registry, group)})


@router.get("/apis/{group}/{version}")
@router.get("/apis/{group}/{version}/")
async def get_api_resources(group: str, version: str, request: Request) -> Response:
    registry = _registry(request)
    if not registry.serves(group, version):
        raise errors.path_not_found()
    return _json({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}",
                  "resources": list(_api_resources(registry, group, version))})
