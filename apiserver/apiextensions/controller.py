"""kube-apiextensions-apiserver's controllers, run by every APIServer process over its own CRD watch cache.

For each CustomResourceDefinition, :class:`CRDController` does what
Kubernetes' naming, establishing, CRD handler and finalizing controllers do:

- **names**: the CRD's names are accepted unless another CRD of the group (or a
  built-in resource of it) holds one of them; the ``NamesAccepted`` condition
  says which (``PluralConflict``: ``"widgets" is already in use``) and
  ``status.acceptedNames`` records what was accepted;
- **established**: once its names are accepted, ``Established`` is True;
- **API approval**: a CRD of the community's groups (``*.k8s.io``) gets the
  ``KubernetesAPIApprovalPolicyConformant`` condition its approval annotation earns;
- **serving**: an established CRD's versions are served
  (:func:`~apiserver.apiextensions.customresource.resources_for`), their
  schemas published (:func:`machinery.api.schema.set_custom_definitions`),
  and served anew when the CRD changes; a CRD that is gone is unserved, which
  ends its watches;
- **cleanup**: a CRD being deleted still serves its objects (refusing creates)
  while every custom object is deleted; then the
  ``customresourcecleanup.apiextensions.k8s.io`` finalizer is removed and the
  CRD goes.

Every APIServer against the same etcd runs this loop on its own watch cache,
so all of them serve a new CRD as soon as its status reaches them; their status
writes are idempotent and guarded (a lost race is retried from the newer CRD).

Concurrency: one task (:meth:`CRDController.run`) owns the served state; it
takes CRD names from a queue fed by the watch, one at a time, and reads the
CRD from the cache when it works on it. A CRD being cleaned up is queued again
until it is gone.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import TYPE_CHECKING, Any, Final

import orjson

from apiserver import errors
from apiserver.apiextensions import customresource
from apiserver.apiextensions.crdvalidation import CLEANUP_FINALIZER, api_approval, is_protected_group
from apiserver.registry.apiextensions.customresourcedefinitions import (
    CustomResourceDefinitionStatusStrategy,
    set_condition,
)
from apiserver.registry.store import DeleteOptions, WriteOptions
from apiserver.registry.strategy import Obj
from apiserver.watchcache import Filter
from machinery.api import kinds
from machinery.api import schema as defs
from machinery.api.kinds import ResourceInfo

if TYPE_CHECKING:
    from apiserver.server import APIServer

log = logging.getLogger("apiserver.apiextensions")

_MANAGER: Final = "kube-apiserver"
_CLEANUP_RETRY: Final = 0.5
_VERSION: Final = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(name: str) -> int:
    """Kubernetes' version order: GA before beta before alpha, higher numbers first, others last."""
    m = _VERSION.match(name)
    if m is None:
        return 1
    major = int(m.group(1))
    minor = int(m.group(3) or 0)
    stage = {"alpha": 0, "beta": 1, None: 2}[m.group(2)]
    return 100 + stage * 10_000 + major * 100 + minor


class CRDController:
    """Names, establishes, serves and cleans up every CustomResourceDefinition (see the module docstring)."""

    def __init__(self, server: APIServer) -> None:
        self.server = server
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.pending: set[str] = set()
        #: CRD name -> (fingerprint, the infos it registers: its served versions and its storage version).
        self.served: dict[str, tuple[str, list[ResourceInfo[Any]]]] = {}

    @property
    def _cache(self) -> Any:
        return self.server.caches[kinds.CUSTOM_RESOURCE_DEFINITIONS]

    def _enqueue(self, name: str) -> None:
        if name not in self.pending:
            self.pending.add(name)
            self.queue.put_nowait(name)

    async def run(self) -> None:
        cache = self._cache
        while True:
            await cache.ready.wait()
            watcher = cache.watch(Filter(namespace=None), since=None, bookmarks=False, send_initial=True)
            feeder = asyncio.create_task(self._feed(watcher), name="crd-watch")
            try:
                while not feeder.done() or not self.queue.empty():
                    getter = asyncio.create_task(self.queue.get())
                    done, _ = await asyncio.wait({getter, feeder}, return_when=asyncio.FIRST_COMPLETED)
                    if getter not in done:
                        getter.cancel()
                        continue
                    name = getter.result()
                    self.pending.discard(name)
                    try:
                        await self.sync(name)
                    except errors.APIError as e:
                        log.info("CustomResourceDefinition %s: %s; retrying", name, e.message)
                        self._later(name, _CLEANUP_RETRY)
                    except Exception:
                        log.exception("CustomResourceDefinition %s could not be reconciled", name)
                        self._later(name, 2.0)
            finally:
                feeder.cancel()
                watcher.close()

    async def _feed(self, watcher: Any) -> None:
        """Queue the name of every CRD the watch reports (a relist of the cache ends it: run starts again)."""
        while True:
            line = await watcher.queue.get()
            if line is None:
                return
            event = orjson.loads(line)
            name = ((event.get("object") or {}).get("metadata") or {}).get("name")
            if event.get("type") in ("ADDED", "MODIFIED", "DELETED") and name:
                self._enqueue(name)

    def _later(self, name: str, delay: float) -> None:
        asyncio.get_running_loop().call_later(delay, self._enqueue, name)

    # --- one CRD ------------------------------------------------------------------------------

    async def sync(self, name: str) -> None:
        entry = self._cache.get(kinds.CUSTOM_RESOURCE_DEFINITIONS.etcd_key(None, name))
        if entry is None:
            self._unserve(name)
            return
        crd: Obj = orjson.loads(entry.raw)
        terminating = bool(crd["metadata"].get("deletionTimestamp"))
        if not terminating and self._status_changed(crd):
            # Served from what was just written, not when the write comes back through the watch: a
            # client that reads Established from etcd may create its first object a moment later.
            written = await self._write_status(crd)
            if written is None:
                return  # a newer CRD (or none) is on its way through the watch
            crd = written
        established = any(c.get("type") == "Established" and c.get("status") == "True"
                          for c in (crd.get("status") or {}).get("conditions") or ())
        if established:
            self._serve(name, crd)
        if terminating:
            await self._cleanup(name, crd)

    def _conflicts(self, crd: Obj) -> tuple[str, str] | None:
        """(reason, message) when another CRD or built-in resource of the group holds one of the names."""
        spec = crd.get("spec") or {}
        group = spec.get("group")
        names = spec.get("names") or {}
        me = crd["metadata"]["name"]
        taken: dict[str, set[str]] = {"plural": set(), "singular": set(), "kind": set(), "listKind": set(),
                                      "shortNames": set()}
        for info in kinds.RESOURCES:
            if info.group == group:
                taken["plural"].add(info.plural)
                taken["singular"].add(info.singular)
                taken["kind"].add(info.kind)
                taken["listKind"].add(info.list_kind)
                taken["shortNames"].update(info.short_names)
        for other in self._cache.list(Filter(namespace=None)):
            obj = other.obj
            if obj["metadata"]["name"] == me or (obj.get("spec") or {}).get("group") != group:
                continue
            accepted = (obj.get("status") or {}).get("acceptedNames") or {}
            for key in ("plural", "singular", "kind", "listKind"):
                if accepted.get(key):
                    taken[key].add(accepted[key])
            taken["shortNames"].update(accepted.get("shortNames") or ())
        for key, reason in (("plural", "PluralConflict"), ("singular", "SingularConflict"),
                            ("kind", "KindConflict"), ("listKind", "ListKindConflict")):
            value = names.get(key)
            if value and value in taken[key]:
                return reason, f'"{value}" is already in use'
        for short in names.get("shortNames") or ():
            if short in taken["shortNames"]:
                return "ShortNamesConflict", f'"{short}" is already in use'
        return None

    def _status_changed(self, crd: Obj) -> bool:
        """Set NamesAccepted, Established and acceptedNames as they should be; whether that changed them."""
        status = crd.setdefault("status", {})
        before = orjson.dumps(status, option=orjson.OPT_SORT_KEYS)
        spec = crd.get("spec") or {}
        if is_protected_group(spec.get("group")):
            state, message = api_approval(crd["metadata"].get("annotations"))
            set_condition(crd, "KubernetesAPIApprovalPolicyConformant",
                          "True" if state == "ApprovedAnnotation" else "False", state, message)
        conflict = self._conflicts(crd)
        if conflict is None:
            names = dict((crd.get("spec") or {}).get("names") or {})
            status["acceptedNames"] = names
            set_condition(crd, "NamesAccepted", "True", "NoConflicts", "no conflicts found")
            set_condition(crd, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted")
        else:
            reason, message = conflict
            set_condition(crd, "NamesAccepted", "False", reason, message)
            if not any(c.get("type") == "Established" and c.get("status") == "True"
                       for c in status.get("conditions") or ()):
                set_condition(crd, "Established", "False", "NotAccepted", "not all names are accepted")
            status.setdefault("acceptedNames", {"plural": "", "kind": ""})
        return orjson.dumps(status, option=orjson.OPT_SORT_KEYS) != before

    async def _write_status(self, crd: Obj, *, finalized: bool = False) -> Obj | None:
        """Write the CRD's status through ``/status`` (and, when ``finalized``, drop the cleanup finalizer);
        the CRD as written, or None when a newer one (or none) was there."""
        name = crd["metadata"]["name"]
        rv = crd["metadata"].get("resourceVersion")
        store = self.server.store(kinds.CUSTOM_RESOURCE_DEFINITIONS)
        strategy = CustomResourceDefinitionStatusStrategy(store.strategy)

        def written(current: Obj, _entry: Any) -> Obj:
            out = {**current, "status": crd["status"]}
            if finalized:
                meta = out["metadata"] = dict(current["metadata"])
                meta["finalizers"] = [f for f in meta.get("finalizers") or () if f != CLEANUP_FINALIZER]
            return out
        try:
            entry, _ = await store.using(strategy).update_with(
                None, name, written, WriteOptions(field_manager=_MANAGER, subresource="status"),
                expect_rv=lambda _n: rv)
        except errors.APIError as e:
            if e.code in (404, 409):
                return None  # a newer CRD (or none) is on its way through the watch
            raise
        result: Obj = orjson.loads(entry.raw)
        return result

    # --- serving ------------------------------------------------------------------------------

    def _serve(self, name: str, crd: Obj) -> None:
        fingerprint = customresource.fingerprint(crd)
        current = self.served.get(name)
        if current is not None and current[0] == fingerprint:
            return
        resources = customresource.resources_for(crd)
        infos = [r.info for r in resources]
        # Versions go from the registry before their definitions, and definitions come before their
        # versions: an OpenAPI build in the thread pool that meets a missing definition has seen the
        # registry change, so Registry.memo builds it again.
        if current is not None:
            for info in current[1]:
                if info not in infos:
                    self.server.unserve(info)
        defs.set_custom_definitions(name, customresource.definitions(crd))
        for resource in resources:
            self.server.serve(resource, version_priority=version_priority(resource.info.version))
        self.served[name] = (fingerprint, infos)
        log.info("serving %s (%s)", name, ", ".join(r.info.api_version for r in resources if r.served))

    def _unserve(self, name: str) -> None:
        current = self.served.pop(name, None)
        if current is None:
            return
        for info in reversed(current[1]):
            self.server.unserve(info)
        defs.set_custom_definitions(name, {})
        log.info("stopped serving %s", name)

    # --- cleanup ------------------------------------------------------------------------------

    async def _cleanup(self, name: str, crd: Obj) -> None:
        """Delete every custom object of a CRD being deleted; then let the CRD go.

        The ``Terminating`` condition says where it is, as Kubernetes' finalizer
        controller words it: ``InstanceDeletionInProgress`` first, while objects
        remain (their own finalizers may hold them); ``InstanceDeletionCompleted``
        or ``NeverEstablished`` in the write that removes the finalizer (which
        deletes the CRD, so, as in Kubernetes, that last condition is never seen:
        the DELETED event carries the CRD as it was stored before).
        """
        if CLEANUP_FINALIZER not in (crd["metadata"].get("finalizers") or ()):
            return
        if set_condition(crd, "Terminating", "True", "InstanceDeletionInProgress",
                         "CustomResource deletion is in progress"):
            await self._write_status(crd)
            return  # the status write comes back through the watch
        served = self.served.get(name)
        if served is None:
            # Never established (its names were not accepted): no object can exist.
            set_condition(crd, "Terminating", "False", "NeverEstablished", "resource was never established")
            await self._write_status(crd, finalized=True)
            return
        store = self.server.store(served[1][0])
        listed = await store.list(Filter(namespace=None))
        for entry in listed.entries:
            meta = entry.obj.get("metadata") or {}
            if meta.get("deletionTimestamp"):
                continue
            try:
                await store.delete(meta.get("namespace"), meta["name"], DeleteOptions())
            except errors.APIError as e:
                if e.code != 404:
                    raise
        if listed.entries:
            log.info("%s waiting for %d items to be removed", name, len(listed.entries))
            self._later(name, _CLEANUP_RETRY)
            return
        set_condition(crd, "Terminating", "False", "InstanceDeletionCompleted", "removed all instances")
        await self._write_status(crd, finalized=True)
