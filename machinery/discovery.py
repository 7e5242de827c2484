"""Client-side discovery: which resources the APIServer serves, read from ``/api`` and ``/apis``.

client-go's discovery client in small, for the controllers that act on every
kind (the garbage collector, the namespace controller, the ResourceQuota
controller's object counts): the resource lists of every group version,
each entry made a :class:`~machinery.api.kinds.ResourceInfo`. Built-in
resources get their official model (the table in ``machinery.api.kinds``);
anything else (custom resources, or kinds of a newer server) gets
:class:`~machinery.api.unstructured.Unstructured`, which keeps every field.

A group version that fails to answer is left out and reported, as
``ServerPreferredResources`` returns partial results with an
``ErrGroupDiscoveryFailed``; callers treat that as "try again later".

Stateless; every call reads the APIServer afresh.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx

from machinery.api import kinds
from machinery.api.kinds import ResourceInfo
from machinery.api.unstructured import Unstructured
from machinery.client.errors import ApiError
from machinery.client.rest import Client

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Discovery:
    """What one discovery pass found."""

    #: Every resource of every served group version (no subresources).
    resources: list[ResourceInfo[Any]] = field(default_factory=list)
    #: The version each group prefers.
    preferred: dict[str, str] = field(default_factory=dict)
    #: Group versions whose resource list could not be read ("apps/v1": "the error").
    failed: dict[str, str] = field(default_factory=dict)

    def preferred_resources(self) -> list[ResourceInfo[Any]]:
        """``ServerPreferredResources``: each group's resources in its preferred version only."""
        return [r for r in self.resources if self.preferred.get(r.group) == r.version]

    def by_kind(self) -> dict[tuple[str, str], ResourceInfo[Any]]:
        """Every resource by (apiVersion, kind), to resolve owner references of any version."""
        return {(r.api_version, r.kind): r for r in self.resources}


def with_verbs(resources: Iterable[ResourceInfo[Any]], *verbs: str) -> list[ResourceInfo[Any]]:
    """``discovery.FilteredBy(SupportsAllVerbs{...})``."""
    return [r for r in resources if all(v in r.verbs for v in verbs)]


async def discover(client: Client) -> Discovery:
    """Read ``/api``, ``/apis`` and every group version's resource list."""
    result = Discovery()
    group_versions: list[tuple[str, str]] = []
    core = await client.get_path("/api")
    for version in core.get("versions") or ():
        group_versions.append(("", version))
    result.preferred[""] = "v1"
    groups = await client.get_path("/apis")
    for group in groups.get("groups") or ():
        name = group.get("name") or ""
        preferred = (group.get("preferredVersion") or {}).get("version")
        for version in group.get("versions") or ():
            group_versions.append((name, version.get("version") or ""))
        if preferred:
            result.preferred[name] = preferred
    for group, version in group_versions:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            listing = await client.get_path(path)
        except (ApiError, httpx.TransportError) as err:
            result.failed[f"{group}/{version}" if group else version] = str(err)
            continue
        for entry in listing.get("resources") or ():
            plural = entry.get("name") or ""
            if not plural or "/" in plural:
                continue
            result.resources.append(_resource(group, version, entry))
    if result.failed:
        log.warning("discovery: unable to retrieve the complete list of server APIs: %s",
                    ", ".join(f"{gv}: {err}" for gv, err in sorted(result.failed.items())))
    return result


def _resource(group: str, version: str, entry: dict[str, Any]) -> ResourceInfo[Any]:
    plural = entry["name"]
    builtin = kinds.lookup(group, version, plural)
    verbs = tuple(entry.get("verbs") or ())
    if builtin is not None:
        return builtin
    return ResourceInfo(group=group, version=version, plural=plural, singular=entry.get("singularName") or "",
                        kind=entry.get("kind") or "", namespaced=bool(entry.get("namespaced")),
                        model_ref=Unstructured, etcd_resource="", definition="",
                        short_names=tuple(entry.get("shortNames") or ()), verbs=verbs,
                        categories=tuple(entry.get("categories") or ()))
