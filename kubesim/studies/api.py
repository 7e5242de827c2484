"""How the study commands reach a cluster, and which resources it serves.

- **connection**: ``--kubeconfig FILE`` (its current context, read by
  :func:`machinery.client.config_from_flags`, so whatever credentials kubesim's
  clients understand apply here too) or ``--server URL``; without either,
  ``$KUBECONFIG``, else the kubeconfig ``kubesim up`` writes
  (``.kubesim/kubeconfig``), else ``http://127.0.0.1:8080``;
- **discovery**: :func:`discover` reads ``/api`` and ``/apis`` and lists every
  resource in its group's preferred version, with its verbs and scope, so a
  snapshot or a recording covers every kind the server serves, custom
  resources included, and a load can tell which kinds a target lacks;
- **objects** are kept as plain JSON (:class:`RawObject` keeps every field as
  it came), never decoded into models that could drop or reshape a field.

Stateless; every call reads the APIServer afresh.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from machinery.api import kinds
from machinery.api.kinds import ResourceInfo
from machinery.client import Client, ClientConfig, ConfigError, Forbidden, config_from_flags

DEFAULT_KUBECONFIG: Final = Path(".kubesim") / "kubeconfig"
DEFAULT_SERVER: Final = "http://127.0.0.1:8080"


class RawMeta(BaseModel):
    """An object's metadata: the fields the informer's keys read, typed; every other field kept as given."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    name: str | None = None
    namespace: str | None = None
    resource_version: str | None = Field(default=None, alias="resourceVersion")
    owner_references: list[dict[str, Any]] | None = Field(default=None, alias="ownerReferences")


class RawObject(BaseModel):
    """Any API object, every field kept as the server sent it; :attr:`wire` gives it back as JSON."""

    model_config = ConfigDict(extra="allow")

    metadata: RawMeta = Field(default_factory=RawMeta)

    @property
    def wire(self) -> dict[str, Any]:
        out = dict(self.model_extra or {})
        out["metadata"] = self.metadata.model_dump(by_alias=True, exclude_unset=True)
        return out


def add_connection_flags(parser: argparse.ArgumentParser, *, prefix: str = "") -> None:
    parser.add_argument(f"--{prefix}kubeconfig", metavar="FILE",
                        help=f"kubeconfig of the cluster (default: $KUBECONFIG, else {DEFAULT_KUBECONFIG})")
    parser.add_argument(f"--{prefix}server", metavar="URL",
                        help=f"the APIServer's address when there is no kubeconfig (default: {DEFAULT_SERVER})")


def connection(kubeconfig: str | None, server: str | None) -> ClientConfig:
    """The cluster the flags name (see the module docstring); ConfigError when a named kubeconfig is unusable."""
    if kubeconfig is None and server is None and DEFAULT_KUBECONFIG.exists():
        kubeconfig = str(DEFAULT_KUBECONFIG)
    try:
        return config_from_flags(server, kubeconfig)
    except ConfigError:
        if kubeconfig is not None:
            raise
        return ClientConfig(server or DEFAULT_SERVER)


def client(config: ClientConfig, component: str) -> Client:
    return Client(config, user_agent=f"kubesim-{component}", max_connections=64)


#: How long a create waits for a new namespace's ServiceAccount (the ServiceAccount controller makes it).
SERVICE_ACCOUNT_WAIT: Final = 30.0
_NO_SERVICE_ACCOUNT: Final = "error looking up service account"


async def create(api: Client, info: ResourceInfo[RawObject], body: dict[str, Any], namespace: str | None) -> RawObject:
    """Create ``body``, waiting as a client must for the ServiceAccount of a namespace just created.

    ServiceAccount admission refuses a Pod (403) until the ServiceAccount
    controller has made the namespace's ``default``; a replay or a load sends
    the Pod right after the Namespace, so it retries that refusal (only that
    one) for up to :data:`SERVICE_ACCOUNT_WAIT` seconds.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SERVICE_ACCOUNT_WAIT
    delay = 0.05
    while True:
        try:
            return await api.create(info, body, namespace=namespace)
        except Forbidden as err:
            if _NO_SERVICE_ACCOUNT not in str(err) or loop.time() + delay > deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)


@dataclass(frozen=True, slots=True)
class Served:
    """One resource the server serves, in its group's preferred version."""

    info: ResourceInfo[RawObject]

    @property
    def group_kind(self) -> str:
        """``Deployment.apps``, ``Pod``: how a kind is named independent of its version."""
        return self.info.group_kind

    @property
    def verbs(self) -> tuple[str, ...]:
        return self.info.verbs

    def can(self, *verbs: str) -> bool:
        return all(v in self.info.verbs for v in verbs)


def raw_resource(group: str, version: str, entry: dict[str, Any]) -> ResourceInfo[RawObject]:
    """A discovery entry as a resource the client can address, its objects read as :class:`RawObject`."""
    plural = str(entry.get("name") or "")
    builtin = kinds.lookup(group, version, plural)
    if builtin is not None:
        return dataclasses.replace(builtin, model_ref=RawObject, verbs=tuple(entry.get("verbs") or builtin.verbs))
    return ResourceInfo(group=group, version=version, plural=plural, singular=str(entry.get("singularName") or ""),
                        kind=str(entry.get("kind") or ""), namespaced=bool(entry.get("namespaced")),
                        model_ref=RawObject, etcd_resource="", definition="",
                        short_names=tuple(entry.get("shortNames") or ()), verbs=tuple(entry.get("verbs") or ()),
                        categories=tuple(entry.get("categories") or ()))


@dataclass(slots=True)
class Discovery:
    resources: list[Served]
    #: Group versions whose resource list could not be read, with the error.
    failed: dict[str, str]

    def by_group_kind(self) -> dict[str, Served]:
        return {s.group_kind: s for s in self.resources}

    def listable(self) -> list[Served]:
        return [s for s in self.resources if s.can("list")]


async def discover(api: Client, *, all_versions: bool = False) -> Discovery:
    """Every resource (no subresources) in its group's preferred version, or in every version served."""
    found: list[Served] = []
    failed: dict[str, str] = {}
    versions: list[tuple[str, str]] = [("", "v1")]
    groups = await api.get_path("/apis")
    for group in groups.get("groups") or ():
        preferred = (group.get("preferredVersion") or {}).get("version")
        if not group.get("name") or not preferred:
            continue
        if all_versions:
            versions.extend((group["name"], v["version"]) for v in group.get("versions") or () if v.get("version"))
        else:
            versions.append((group["name"], preferred))
    for group_name, version in versions:
        path = f"/apis/{group_name}/{version}" if group_name else f"/api/{version}"
        try:
            listing = await api.get_path(path)
        except Exception as err:  # noqa: BLE001 - one broken group version must not hide the others
            failed[f"{group_name}/{version}" if group_name else version] = str(err)
            continue
        for entry in listing.get("resources") or ():
            if "/" not in str(entry.get("name") or "/"):
                found.append(Served(raw_resource(group_name, version, entry)))
    return Discovery(found, failed)


def names(resources: Iterable[Served]) -> list[str]:
    return sorted(s.group_kind for s in resources)
