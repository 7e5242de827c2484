"""``kubesim snapshot save FILE`` and ``kubesim snapshot load FILE``: a cluster's objects, as YAML.

**save** lists every kind the server serves that a client can create
(discovery: built-in kinds and custom resources alike;
:data:`~kubesim.studies.objects.SKIPPED_BY_DEFAULT` left out unless
``--include``\\ d), but for the objects every control plane makes for
itself (:class:`~kubesim.studies.objects.ControlPlaneMade`), and writes each
object in its portable form
(:func:`~kubesim.studies.objects.portable`: no server-set metadata, no
status but a Node's shape, no Secret data) as multi-document YAML, sorted
by kind, namespace and name, so the same cluster always gives the same
bytes. It only reads: ``--kubeconfig`` may name any conformant cluster
(production, read-only credentials suffice). Objects being deleted are left out.

**load** recreates the objects on a kubesim cluster, as KWOK's restore does:

1. Namespaces, then CustomResourceDefinitions (their custom resources load
   once discovery serves them), then Nodes: each annotated
   ``kubesim.io/adopt-node`` so that kubelet_sim (``--adopt-nodes``, which
   ``kubesim up`` passes) simulates it with its capacity, allocatable,
   labels, taints and conditions;
2. every other object that owns nothing, then the Pods bound to a node
   (``spec.nodeName`` kept: they run where they ran; the scheduler never sees
   them), then the Pods not bound (the scheduler places them, after the bound
   ones take their room);
3. the owners, dependents before owners (ReplicaSets before their
   Deployment): a controller that sees its Pods exist adopts them instead of
   creating more;
4. the owner references, each given the uid its owner has here (an object
   is created without the references whose owners do not exist yet, and
   patched once they do; a reference whose owner is nowhere is dropped and
   reported).

Objects the target's control plane makes itself (a snapshot of an older
kubesim may hold them) are left to it and counted. An object that exists
already is left alone when it says at least what the snapshot says (the
server may have defaulted more), updated otherwise. Kinds the target does
not serve are listed and their objects skipped; everything else loads
(``--strict`` makes that an error).
Problems with the file (bad YAML, a document without kind or name) are
reported with the document's line and nothing is created.

Concurrency: one event loop; up to ``--parallel`` writes in flight within a
step, steps one after the other.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

import yaml

from kubelet_sim.adopt import ADOPT_ANNOTATION
from kubesim.studies import api
from kubesim.studies.objects import (
    SKIPPED_BY_DEFAULT,
    ControlPlaneMade,
    group_kind,
    key_of,
    ordered,
    owner_key,
    portable,
)
from machinery.api.kinds import ResourceInfo
from machinery.client import AlreadyExists, ApiError, Client, ConfigError, NotFound, PatchType, TransportError

HEADER: Final = "# kubesim snapshot: `kubesim snapshot load FILE` recreates these objects on a kubesim cluster\n"
_CRD: Final = "CustomResourceDefinition.apiextensions.k8s.io"
_CRD_WAIT: Final = 30.0

_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

Key = tuple[str, str, str]


class SnapshotError(ValueError):
    """A snapshot file that cannot be loaded; the message names the document and line."""


# --- save ---------------------------------------------------------------------------------------------------


def _rank(obj: Mapping[str, Any], namespaced: bool) -> tuple[int, str, str, str]:
    kind, namespace, name = key_of(obj)
    first = 0 if kind == "Namespace" else 1 if kind == _CRD else 2 if not namespaced else 3
    return first, kind, namespace, name


async def collect(client: Client, *, include: Iterable[str] = (), exclude: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Every object of every listable kind, portable and sorted."""
    discovery = await api.discover(client)
    skipped = (set(SKIPPED_BY_DEFAULT) - set(include)) | set(exclude)
    ranked: list[tuple[tuple[int, str, str, str], dict[str, Any]]] = []
    for served in discovery.listable():
        # Kinds a client cannot create (ComponentStatus, reviews) are views of something else.
        if served.group_kind in skipped or not served.can("create"):
            continue
        try:
            listed = await client.list(served.info)
        except (ApiError, TransportError) as err:
            print(f"warning: cannot list {served.info.group_resource}: {err}", file=sys.stderr)
            continue
        for item in listed.items:
            obj = item.wire
            obj.setdefault("apiVersion", served.info.api_version)
            obj.setdefault("kind", served.info.kind)
            if (obj.get("metadata") or {}).get("deletionTimestamp"):
                continue
            ranked.append((_rank(obj, served.info.namespaced), portable(obj)))
    ranked.sort(key=lambda pair: pair[0])
    made = ControlPlaneMade.among(obj for _, obj in ranked)
    return [obj for _, obj in ranked if not made(obj)]


def dump(objects: Sequence[Mapping[str, Any]], out: TextIO) -> None:
    out.write(HEADER)
    out.write(yaml.dump_all(list(objects), Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                            allow_unicode=True, width=1 << 16, explicit_start=True))


# --- reading a file -----------------------------------------------------------------------------------------


def read(path: Path) -> list[dict[str, Any]]:
    """The objects of a snapshot file; :class:`SnapshotError` (with the line) if any document is unusable."""
    try:
        text = path.read_text()
    except OSError as err:
        raise SnapshotError(f"cannot read {path}: {err.strerror or err}") from None
    objects: list[dict[str, Any]] = []
    loader = _Loader(text)
    try:
        index = 0
        while loader.check_node():
            node = loader.get_node()
            line = node.start_mark.line + 1
            doc = loader.construct_document(node)
            index += 1
            if doc is None:
                continue
            if not isinstance(doc, dict):
                raise SnapshotError(f"{path}:{line}: document {index} is not an object")
            meta = doc.get("metadata")
            if not doc.get("apiVersion") or not doc.get("kind") or not isinstance(meta, dict) or not meta.get("name"):
                raise SnapshotError(f"{path}:{line}: document {index} needs apiVersion, kind and metadata.name")
            objects.append(doc)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise SnapshotError(f"{where}: not valid YAML: {getattr(err, 'problem', None) or err}") from None
    finally:
        loader.dispose()
    return objects


# --- load ---------------------------------------------------------------------------------------------------


@dataclass
class LoadReport:
    created: Counter[str] = field(default_factory=Counter)
    unchanged: Counter[str] = field(default_factory=Counter)
    updated: Counter[str] = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)
    #: Kinds the target does not serve -> how many of their objects were skipped.
    not_served: Counter[str] = field(default_factory=Counter)
    dropped_owners: list[str] = field(default_factory=list)
    #: Objects the target's control plane makes itself (objects.ControlPlaneMade), by kind: not loaded.
    left_to_cluster: Counter[str] = field(default_factory=Counter)

    @property
    def loaded(self) -> int:
        return sum(self.created.values()) + sum(self.unchanged.values()) + sum(self.updated.values())

    def summary(self) -> str:
        lines = [(f"loaded {self.loaded} objects: {sum(self.created.values())} created, "
                 f"{sum(self.updated.values())} updated, {sum(self.unchanged.values())} unchanged")]
        for kind in sorted(set(self.created) | set(self.updated) | set(self.unchanged)):
            lines.append(f"  {kind}: {self.created[kind]} created, {self.updated[kind]} updated, "
                         f"{self.unchanged[kind]} unchanged")
        if self.left_to_cluster:
            lines.append("left to the target's control plane, which makes its own: " + ", ".join(
                f"{kind} ({count})" for kind, count in sorted(self.left_to_cluster.items())))
        if self.not_served:
            lines.append("not loaded, the target does not serve these kinds: " + ", ".join(
                f"{kind} ({count} object{'s' if count > 1 else ''})" for kind, count in sorted(self.not_served.items())))
        for message in self.dropped_owners:
            lines.append(f"owner reference dropped: {message}")
        for message in self.failed:
            lines.append(f"failed: {message}")
        return "\n".join(lines)


class Loader:
    """Recreates a snapshot's objects on one cluster (see the module docstring)."""

    def __init__(self, client: Client, *, parallel: int = 32, adopt_nodes: bool = True) -> None:
        self._client = client
        self._slots = asyncio.Semaphore(parallel)
        self._adopt_nodes = adopt_nodes
        self._served: dict[tuple[str, str], api.Served] = {}
        self._by_group_kind: dict[str, api.Served] = {}
        #: Object key -> its uid on this cluster, once created or found.
        self.uids: dict[Key, str] = {}
        self.report = LoadReport()

    async def refresh(self) -> None:
        discovery = await api.discover(self._client, all_versions=True)
        self._served = {(s.info.api_version, s.info.kind): s for s in discovery.resources}
        self._by_group_kind = {s.group_kind: s for s in discovery.resources}

    def resource_of(self, obj: Mapping[str, Any]) -> ResourceInfo[api.RawObject] | None:
        served = self._served.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
        return served.info if served is not None else None

    async def load(self, objects: Sequence[Mapping[str, Any]]) -> LoadReport:
        await self.refresh()
        docs = [ordered(dict(o)) for o in objects]
        made = ControlPlaneMade.among(docs)
        for obj in docs:
            if made(obj):
                self.report.left_to_cluster[group_kind(obj)] += 1
        docs = [o for o in docs if not made(o)]
        present = {key_of(o) for o in docs}
        owners = {self._owner_key(o, ref) for o in docs for ref in (o.get("metadata") or {}).get(
            "ownerReferences") or ()}
        namespaces = [o for o in docs if group_kind(o) == "Namespace"]
        crds = [o for o in docs if group_kind(o) == _CRD]
        await self._create_all(namespaces)
        if crds:
            await self._create_all(crds)
            await self._wait_for_crds(crds)
        rest = [o for o in docs if group_kind(o) not in ("Namespace", _CRD)]
        for obj in rest:
            if self.resource_of(obj) is None:
                self.report.not_served[group_kind(obj)] += 1
        rest = [o for o in rest if self.resource_of(o) is not None]
        nodes = [o for o in rest if group_kind(o) == "Node"]
        owning = [o for o in rest if key_of(o) in owners and group_kind(o) != "Node"]
        owning_keys = {key_of(o) for o in owning}
        plain = [o for o in rest if group_kind(o) not in ("Node", "Pod") and key_of(o) not in owning_keys]
        pods = [o for o in rest if group_kind(o) == "Pod" and key_of(o) not in owning_keys]
        bound = [p for p in pods if (p.get("spec") or {}).get("nodeName")]
        unbound = [p for p in pods if not (p.get("spec") or {}).get("nodeName")]
        await self._create_all(nodes)
        await self._create_all(plain)
        await self._create_all(bound)
        await self._create_all(unbound)
        depth = {key_of(o): self._depth(o, {key_of(d): d for d in docs}) for o in owning}
        for level in sorted({*depth.values()}, reverse=True):
            await self._create_all([o for o in owning if depth[key_of(o)] == level])
        await self._patch_owners(docs, present)
        return self.report

    # --- helpers -------------------------------------------------------------------------------------------

    def _owner_key(self, obj: Mapping[str, Any], ref: Mapping[str, Any]) -> Key:
        served = self._served.get((str(ref.get("apiVersion")), str(ref.get("kind"))))
        namespaced = served.info.namespaced if served is not None else True
        return owner_key(obj, ref, namespaced)

    def _depth(self, obj: Mapping[str, Any], docs: Mapping[Key, Mapping[str, Any]], seen: frozenset[Key] = frozenset()
               ) -> int:
        """How many owners above ``obj`` the file holds (0: a root)."""
        depths = [0]
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
            key = self._owner_key(obj, ref)
            if key in docs and key not in seen:
                depths.append(1 + self._depth(docs[key], docs, seen | {key_of(obj)}))
        return max(depths)

    async def _wait_for_crds(self, crds: Sequence[Mapping[str, Any]]) -> None:
        """Until discovery serves every version of the CRDs just created (or a timeout: then they are reported)."""
        wanted = {(f"{c['spec']['group']}/{v['name']}", c["spec"]["names"]["kind"])
                  for c in crds for v in (c.get("spec") or {}).get("versions") or () if v.get("served", True)}
        deadline = asyncio.get_running_loop().time() + _CRD_WAIT
        while True:
            await self.refresh()
            if wanted <= set(self._served) or asyncio.get_running_loop().time() > deadline:
                return
            await asyncio.sleep(0.2)

    async def _create_all(self, objects: Sequence[Mapping[str, Any]]) -> None:
        await asyncio.gather(*(self._create(o) for o in objects))

    async def _create(self, obj: Mapping[str, Any]) -> None:
        info = self.resource_of(obj)
        kind, namespace, name = key = key_of(obj)
        label = f"{kind} {namespace + '/' if namespace else ''}{name}"
        if info is None:
            self.report.not_served[kind] += 1
            return
        body = self._body(obj)
        async with self._slots:
            try:
                created = await api.create(self._client, info, body, namespace or None)
                self.uids[key] = _uid(created.wire)
                self.report.created[kind] += 1
                return
            except AlreadyExists:
                pass
            except (ApiError, TransportError) as err:
                self.report.failed.append(f"{label}: {err}")
                return
            try:
                await self._reconcile(info, key, body, label)
            except (ApiError, TransportError) as err:
                self.report.failed.append(f"{label} exists and could not be updated: {err}")

    async def _reconcile(self, info: ResourceInfo[api.RawObject], key: Key, body: dict[str, Any], label: str) -> None:
        kind, namespace, name = key
        existing = (await self._client.get(info, name, namespace=namespace or None)).wire
        self.uids[key] = _uid(existing)
        mine = portable({**body, "metadata": {**body["metadata"], "ownerReferences": None}})
        theirs = portable({**existing, "metadata": {**existing["metadata"], "ownerReferences": None}})
        if _contains(theirs, mine):
            self.report.unchanged[kind] += 1
            return
        update = dict(body)
        update["metadata"] = {**body["metadata"], "resourceVersion": existing["metadata"]["resourceVersion"]}
        if existing["metadata"].get("ownerReferences") and "ownerReferences" not in body["metadata"]:
            update["metadata"]["ownerReferences"] = existing["metadata"]["ownerReferences"]
        await self._client.update(info, update)
        self.report.updated[kind] += 1

    def _body(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """What to create: owner references only to owners that exist here (with their uids), Nodes to adopt."""
        body = dict(obj)
        meta = dict(body.get("metadata") or {})
        refs = []
        for ref in meta.get("ownerReferences") or ():
            uid = self.uids.get(self._owner_key(obj, ref))
            if uid:
                refs.append({**ref, "uid": uid})
        if refs:
            meta["ownerReferences"] = refs
        else:
            meta.pop("ownerReferences", None)
        if group_kind(obj) == "Node" and self._adopt_nodes:
            meta["annotations"] = {**(meta.get("annotations") or {}), ADOPT_ANNOTATION: "true"}
        body["metadata"] = meta
        return body

    async def _patch_owners(self, docs: Sequence[Mapping[str, Any]], present: set[Key]) -> None:
        """Give every object the owner references it could not have when it was created."""
        async def patch(obj: Mapping[str, Any]) -> None:
            wanted = (obj.get("metadata") or {}).get("ownerReferences") or ()
            info = self.resource_of(obj)
            key = key_of(obj)
            if not wanted or info is None or key not in self.uids:
                return
            refs = []
            for ref in wanted:
                owner = self._owner_key(obj, ref)
                uid = self.uids.get(owner) or await self._find_uid(owner, ref)
                if uid:
                    refs.append({**ref, "uid": uid})
                else:
                    self.report.dropped_owners.append(
                        f"{key[0]} {key[1] + '/' if key[1] else ''}{key[2]}: its owner {owner[0]} {owner[2]} is in "
                        "neither the snapshot nor the cluster")
            if not refs:
                return
            async with self._slots:
                try:
                    current = (await self._client.get(info, key[2], namespace=key[1] or None)).wire
                    if (current.get("metadata") or {}).get("ownerReferences") == refs:
                        return
                    await self._client.patch(info, key[2], {"metadata": {"ownerReferences": refs}},
                                             namespace=key[1] or None, patch_type=PatchType.MERGE)
                except (ApiError, TransportError) as err:
                    self.report.failed.append(f"{key[0]} {key[2]}: setting its owner references: {err}")
        await asyncio.gather(*(patch(o) for o in docs))

    async def _find_uid(self, owner: Key, ref: Mapping[str, Any]) -> str | None:
        served = self._served.get((str(ref.get("apiVersion")), str(ref.get("kind"))))
        if served is None:
            return None
        try:
            found = await self._client.get(served.info, owner[2], namespace=owner[1] or None)
        except (NotFound, ApiError, TransportError):
            return None
        uid = _uid(found.wire)
        self.uids[owner] = uid
        return uid


def _contains(have: Any, want: Any) -> bool:
    """Whether ``have`` says at least what ``want`` says (the server may have defaulted more fields)."""
    if isinstance(want, Mapping):
        return isinstance(have, Mapping) and all(k in have and _contains(have[k], v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(have) == len(want) and all(
            _contains(h, w) for h, w in zip(have, want, strict=True))
    return bool(have == want)


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


# --- the command --------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    save = sub.add_parser("save", help="write the cluster's objects to FILE (read-only)",
                          description="Write every object of every kind the cluster serves (no server-set "
                                      "metadata, no Secret data; not what every control plane makes for itself, "
                                      "such as default/kubernetes) to FILE as multi-document YAML, in a stable "
                                      "order. Works against any cluster a kubeconfig reaches; it only reads.")
    save.add_argument("file", type=Path, metavar="FILE", help="where to write the snapshot ('-': stdout)")
    save.add_argument("--include", action="append", default=[], metavar="KIND",
                      help="also save a kind skipped by default (Event, Lease.coordination.k8s.io, "
                           "EndpointSlice.discovery.k8s.io, ControllerRevision.apps); repeatable")
    save.add_argument("--exclude", action="append", default=[], metavar="KIND",
                      help="leave a kind out (as Kind or Kind.group, e.g. Secret, Deployment.apps); repeatable")
    api.add_connection_flags(save)
    load = sub.add_parser("load", help="recreate FILE's objects on a kubesim cluster",
                          description="Recreate a snapshot's objects: Nodes taken over by kubelet_sim as they "
                                      "were, bound Pods on their nodes, owners after their dependents, owner "
                                      "references re-pointed. Kinds the target does not serve are listed and skipped.")
    load.add_argument("file", type=Path, metavar="FILE", help="a file written by kubesim snapshot save")
    load.add_argument("--strict", action="store_true",
                      help="exit with an error when a kind of the snapshot is not served by the target")
    load.add_argument("--no-adopt", action="store_true",
                      help="do not annotate Nodes for kubelet_sim to simulate (they stay as created)")
    load.add_argument("--parallel", type=int, default=32, metavar="N", help="writes in flight (default 32)")
    api.add_connection_flags(load)


def main(args: argparse.Namespace) -> int:
    try:
        config = api.connection(args.kubeconfig, args.server)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    try:
        if args.action == "save":
            return asyncio.run(_save(config, args))
        return asyncio.run(_load(config, args))
    except (ApiError, TransportError) as err:
        print(f"error: {config.server}: {err}", file=sys.stderr)
        return 1


async def _save(config: Any, args: argparse.Namespace) -> int:
    async with api.client(config, "snapshot") as client:
        objects = await collect(client, include=args.include, exclude=args.exclude)
    if str(args.file) == "-":
        dump(objects, sys.stdout)
    else:
        tmp = args.file.with_name(args.file.name + ".tmp")
        with tmp.open("w") as out:
            dump(objects, out)
        tmp.replace(args.file)
    kinds = Counter(group_kind(o) for o in objects)
    print(f"saved {len(objects)} objects of {len(kinds)} kinds to {args.file}", file=sys.stderr)
    return 0


async def _load(config: Any, args: argparse.Namespace) -> int:
    try:
        objects = read(args.file)
    except SnapshotError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    async with api.client(config, "snapshot") as client:
        report = await Loader(client, parallel=args.parallel, adopt_nodes=not args.no_adopt).load(objects)
    print(report.summary())
    if report.failed or (args.strict and report.not_served):
        return 1
    return 0
