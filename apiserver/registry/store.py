"""The generic store: create, read, update, delete, list and watch for any resource.

This is kube-apiserver's ``genericregistry.Store`` in small. A Strategy says
what is specific to a kind; everything here is the same for all of them:

- **Reads.** A GET reads etcd (a consistent read); ``resourceVersion=0`` may be
  served from the watch cache. Lists are served from the watch cache once it
  has caught up with etcd's current revision (a consistent read, as
  kube-apiserver does since 1.31), except paginated ones (``limit``), which
  read etcd at a fixed revision so that every page belongs to one snapshot.
- **Writes.** Create is "create_revision == 0, then put". Every update goes
  through :meth:`Store.update_with`: read the current object (the cache is the
  first guess, etcd the truth), compute the new one, and write it guarded by the
  current mod_revision. When the client named a resourceVersion, a mismatch is
  ``409 Conflict``; otherwise the loop retries with the value etcd returned
  (kube-apiserver's GuaranteedUpdate). A write that changes nothing is not
  written (same resourceVersion back), which is what lets
  ``kubectl apply`` say "unchanged".
- **Deletes.** Preconditions, graceful deletion (Pods on a node), finalizers
  (the object stays with a deletionTimestamp until they are gone; removing the
  last one deletes it), and propagation policies (recorded as the
  ``foregroundDeletion``/``orphan`` finalizers for the garbage collector).

Concurrency: stores are shared by every request on the event loop; they keep
no mutable state of their own except the event lease, replaced atomically.
Objects read from the cache are shared and never mutated: writes work on
fresh copies (``orjson.loads(entry.raw)``).
"""

from __future__ import annotations

import base64
import binascii
import builtins
import datetime
import logging
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from apiserver import errors
from apiserver.errors import APIError
from apiserver.registry.strategy import Obj, Strategy
from apiserver.storage.etcd import (
    Compacted,
    EtcdStorage,
    KeyExists,
    RevisionMismatch,
    StorageError,
    StorageTimeout,
    Unavailable,
)
from apiserver.storage.objects import Entry, at_revision, decode, encode, stamp
from apiserver.validation.field import FieldError, invalid_message
from apiserver.watchcache import Filter, NotFresh, WatchCache
from machinery.api import meta as metautil
from machinery.api.kinds import ResourceInfo

log = logging.getLogger("apiserver.store")

#: The alphabet and length kube-apiserver uses for generateName suffixes.
_NAME_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_NAME_SUFFIX_LEN: Final = 5
_GENERATE_NAME_ATTEMPTS: Final = 8
_UPDATE_ATTEMPTS: Final = 16

FOREGROUND_FINALIZER: Final = "foregroundDeletion"
ORPHAN_FINALIZER: Final = "orphan"

#: Called after a write is prepared, to record field ownership (metadata.managedFields).
FieldTracker = Callable[[Obj | None, Obj, str, str | None], None]


@dataclass(slots=True)
class WriteOptions:
    dry_run: bool = False
    field_manager: str = ""
    subresource: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: False when the caller records field ownership itself (server-side apply).
    track_fields: bool = True


@dataclass(slots=True)
class DeleteOptions:
    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    precondition_uid: str | None = None
    precondition_rv: str | None = None
    dry_run: bool = False


@dataclass(slots=True)
class ListResult:
    entries: list[Entry]
    resource_version: int
    continue_token: str | None = None
    remaining: int | None = None


#: A generated name must still be a valid name: the prefix is cut to leave room for the suffix.
_MAX_GENERATED_PREFIX: Final = 63 - _NAME_SUFFIX_LEN
#: Metadata fields that Go's encoder omits when empty; a patch can leave them empty.
_OMIT_EMPTY_META: Final = ("labels", "annotations", "ownerReferences", "finalizers", "managedFields")


def generate_name(prefix: str) -> str:
    return prefix[:_MAX_GENERATED_PREFIX] + "".join(random.choices(_NAME_ALPHABET, k=_NAME_SUFFIX_LEN))


def drop_empty_metadata(meta: dict[str, Any]) -> None:
    """Remove empty lists and maps that Kubernetes would not store (``ownerReferences: []``)."""
    for k in _OMIT_EMPTY_META:
        if k in meta and not meta[k]:
            del meta[k]


def copy_obj(entry: Entry) -> Obj:
    """A private, mutable copy of a cached object."""
    obj: Obj = orjson.loads(entry.raw)
    return obj


def storage_error(e: StorageError) -> APIError:
    if isinstance(e, StorageTimeout):
        return errors.timeout(f"etcd request timed out: {e}")
    if isinstance(e, Unavailable):
        return errors.service_unavailable(f"etcd is unavailable: {e}")
    return errors.internal_error(str(e))


def _continue_token(rv: int, start: str) -> str:
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def parse_continue(token: str) -> tuple[int, str]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded))
        if data.get("v") != "meta.k8s.io/v1" or not isinstance(data.get("rv"), int):
            raise ValueError("bad version")
        start = data.get("start")
        if not isinstance(start, str) or ".." in start.split("/"):
            raise ValueError("bad start key")
        return int(data["rv"]), start
    except (ValueError, binascii.Error, orjson.JSONDecodeError) as e:
        raise errors.bad_request(f"continue key is not valid: {e}") from e


class Store:
    """CRUD, list and watch for one resource, on etcd and its watch cache."""

    def __init__(self, strategy: Strategy, storage: EtcdStorage, cache: WatchCache, *,
                 namespace_exists: Callable[[ResourceInfo[Any], str, str], Awaitable[None]] | None = None,
                 field_tracker: FieldTracker | None = None, ttl_seconds: int = 0) -> None:
        self.strategy = strategy
        self.ri = strategy.ri
        self.storage = storage
        self.cache = cache
        self.namespace_exists = namespace_exists
        self.field_tracker = field_tracker
        self.ttl_seconds = ttl_seconds
        self._lease: tuple[int, float] | None = None

    def key(self, namespace: str | None, name: str) -> str:
        return self.ri.etcd_key(namespace, name)

    # --- reads ------------------------------------------------------------------------------

    async def _read(self, key: str) -> Entry | None:
        try:
            kv = await self.storage.get(key)
        except StorageError as e:
            raise storage_error(e) from e
        return decode(kv) if kv is not None else None

    async def get(self, namespace: str | None, name: str, *, resource_version: str | None = None) -> Entry:
        key = self.key(namespace, name)
        if resource_version == "0" and self.cache.ready.is_set():
            entry = self.cache.get(key)
        else:
            entry = await self._read(key)
        if entry is None:
            raise errors.not_found(self.ri, name)
        return entry

    async def list(self, flt: Filter, *, limit: int = 0, continue_token: str | None = None,
                   resource_version: str | None = None, exact: bool = False) -> ListResult:
        if continue_token or (limit > 0 and resource_version in (None, "") ) or exact:
            return await self._list_from_etcd(flt, limit=limit, continue_token=continue_token,
                                              resource_version=resource_version, exact=exact)
        try:
            if resource_version not in (None, "", "0"):
                await self.cache.wait_for(int(resource_version))
            elif resource_version != "0":
                await self.cache.wait_fresh()
            else:
                await self.cache.ready.wait()
        except NotFresh as e:
            raise errors.too_large_resource_version(e.requested, e.current) from e
        except StorageError as e:
            raise storage_error(e) from e
        return ListResult(self.cache.list(flt), self.cache.rv)

    async def _list_from_etcd(self, flt: Filter, *, limit: int, continue_token: str | None,
                              resource_version: str | None, exact: bool) -> ListResult:
        prefix = self.ri.etcd_prefix(flt.namespace)
        base = self.ri.etcd_prefix()
        revision = 0
        start: str | None = None
        if continue_token:
            revision, rel = parse_continue(continue_token)
            start = base + rel
            if not start.startswith(prefix):
                raise errors.bad_request("continue key is not valid: it does not belong to this list")
        elif exact and resource_version:
            revision = int(resource_version)
        matched: list[Entry] = []
        chunk = max(limit, 100) if limit else 10_000
        more = True
        last_key: str | None = None
        try:
            while more and (limit == 0 or len(matched) < limit):
                kvs, rev, more = await self.storage.range(prefix, start=start, limit=chunk, revision=revision)
                # etcd's header carries its current revision, not the one read at: keep the
                # first read's, so that every chunk and page comes from the same snapshot.
                revision = revision or rev
                for i, kv in enumerate(kvs):
                    entry = decode(kv)
                    last_key = kv.key
                    if flt.trivial or flt.matches(entry):
                        matched.append(entry)
                        if limit and len(matched) >= limit:
                            more = more or i < len(kvs) - 1
                            break
                if not kvs:
                    break
                start = kvs[-1].key + "\0"
                chunk = min(chunk * 2, 10_000)
        except Compacted as e:
            if continue_token:
                raise errors.expired(
                    "The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter.") from e
            raise errors.too_old_resource_version(revision, e.compact_revision) from e
        except StorageError as e:
            raise storage_error(e) from e
        token = None
        remaining = None
        if more and last_key is not None:
            token = _continue_token(revision, last_key[len(base):] + "\0")
            if flt.trivial:
                remaining = await self._count_after(prefix, last_key + "\0", revision)
        return ListResult(matched, revision, token, remaining)

    async def _count_after(self, prefix: str, start: str, revision: int) -> int | None:
        try:
            return await self.storage.count(prefix, start=start, revision=revision)
        except StorageError:
            return None

    # --- create ------------------------------------------------------------------------------

    async def create(self, namespace: str | None, obj: Obj, opts: WriteOptions) -> Entry:
        meta = obj.setdefault("metadata", {})
        if self.ri.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        name = meta.get("name") or ""
        prefix = meta.get("generateName") or ""
        if not name and not prefix:
            raise self._invalid(obj, [FieldError.required("metadata.name", "name or generateName is required")])
        if self.ri.namespaced and self.namespace_exists is not None and namespace:
            await self.namespace_exists(self.ri, namespace, name or prefix)

        self.strategy.prepare_for_create(obj)
        self.strategy.default(obj)
        for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(k, None)
        drop_empty_metadata(meta)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = metautil.now_time()
        if self.strategy.has_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        generated = not name
        if generated:
            meta["name"] = name = generate_name(prefix)
        errs = self.strategy.validate(obj)
        if errs:
            raise self._invalid(obj, errs)
        if self.field_tracker is not None and opts.track_fields:
            self.field_tracker(None, obj, opts.field_manager, opts.subresource)
        if opts.dry_run:
            return Entry(self.key(namespace, name), orjson.dumps(obj), 0, obj)

        for attempt in range(_GENERATE_NAME_ATTEMPTS):
            key = self.key(namespace, name)
            stored = encode(obj)
            try:
                rev = await self.storage.create(key, stored, lease=await self._ttl_lease())
            except KeyExists:
                if generated and attempt < _GENERATE_NAME_ATTEMPTS - 1:
                    meta["name"] = name = generate_name(prefix)
                    continue
                raise errors.already_exists(self.ri, name) from None
            except StorageError as e:
                raise storage_error(e) from e
            return self._written(stamp(key, obj, stored, rev))
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _ttl_lease(self) -> int:
        """An etcd lease for objects that expire (Events), reused for a minute like kube-apiserver's."""
        if not self.ttl_seconds:
            return 0
        now = time.monotonic()
        if self._lease is None or now - self._lease[1] > 60:
            try:
                lease_id = await self.storage.grant_lease(self.ttl_seconds + 60)
            except StorageError as e:
                raise storage_error(e) from e
            self._lease = (lease_id, now)
        return self._lease[0]

    # --- update ------------------------------------------------------------------------------

    async def update_with(self, namespace: str | None, name: str,
                          mutate: Callable[[Obj, Entry], Obj], opts: WriteOptions, *,
                          expect_rv: Callable[[Obj], str | None] | None = None,
                          create: Callable[[], Obj] | None = None,
                          create_on_update: bool | None = None) -> tuple[Entry, bool]:
        """Read, mutate, write guarded by the read's revision; retry on races (GuaranteedUpdate).

        ``mutate(copy, current)`` returns the new object (it may be the copy, changed).
        ``expect_rv(new)`` gives the resourceVersion the client required, if any: a
        mismatch with the stored object is a 409. ``create()`` supplies an object to
        create when none exists and create-on-update is allowed (``create_on_update``,
        else the strategy's rule).
        Returns (entry, created).
        """
        key = self.key(namespace, name)
        current = self.cache.get(key) if self.cache.ready.is_set() else None
        from_cache = current is not None
        if current is None:
            current = await self._read(key)
        for _ in range(_UPDATE_ATTEMPTS):
            if current is None:
                allowed = self.strategy.allow_create_on_update if create_on_update is None else create_on_update
                if create is not None and allowed:
                    try:
                        return await self.create(namespace, create(), opts), True
                    except APIError as e:
                        if e.reason != "AlreadyExists":
                            raise
                        current = await self._read(key)
                        continue
                raise errors.not_found(self.ri, name)
            new = mutate(copy_obj(current), current)
            wanted = expect_rv(new) if expect_rv is not None else None
            if wanted:
                if wanted != str(current.rv):
                    if from_cache:
                        # The cache may lag behind etcd by a few milliseconds: ask etcd before refusing.
                        current, from_cache = await self._read(key), False
                        continue
                    raise errors.stale(self.ri, name)
            elif not self.strategy.allow_unconditional_update and expect_rv is not None:
                raise self._invalid(new, [FieldError.invalid(
                    "metadata.resourceVersion", "", "must be specified for an update")])
            result = await self._prepare_update(new, current, opts)
            if result is None:
                return current, False  # nothing changed: no write
            if result is _DELETE_NOW:
                # The last finalizer went: the object goes. A lost race re-applies the change
                # to the newer object (a 409 if the client named the resourceVersion it saw).
                try:
                    return await self._delete_now(key, current), False
                except RevisionMismatch as m:
                    current = decode(m.current) if m.current is not None else None
                    from_cache = False
                    continue
            if opts.dry_run:
                return Entry(key, orjson.dumps(new), current.rv, new), False
            stored = encode(new)
            try:
                lease = await self._ttl_lease()
                rev = await self.storage.update(key, stored, current.rv, lease=lease)
            except RevisionMismatch as m:
                current = decode(m.current) if m.current is not None else None
                from_cache = False
                continue
            except StorageError as e:
                raise storage_error(e) from e
            return self._written(stamp(key, new, stored, rev)), False
        raise errors.conflict(self.ri, name, "too many concurrent updates; please try again")

    async def _prepare_update(self, new: Obj, current: Entry, opts: WriteOptions) -> Obj | object | None:
        old = current.obj
        meta = new.setdefault("metadata", {})
        old_meta = old.get("metadata") or {}
        # A uid in the new object is a precondition, as kube-apiserver's update checks it.
        if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
            raise errors.conflict(self.ri, old_meta.get("name") or "", "Precondition failed: UID in precondition: "
                                  f"{meta['uid']}, UID in object meta: {old_meta.get('uid')}")
        # Server-owned metadata survives whatever the client sent.
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        meta["name"] = old_meta.get("name")
        if self.ri.namespaced:
            meta["namespace"] = old_meta.get("namespace")
        meta.pop("selfLink", None)
        drop_empty_metadata(meta)
        new.setdefault("apiVersion", self.ri.api_version)
        new.setdefault("kind", self.ri.kind)

        sub = opts.subresource
        if sub is None:
            self.strategy.prepare_for_update(new, old)
            self.strategy.default(new)
        elif sub == "status":
            self.strategy.prepare_for_status_update(new, old)
            meta = new["metadata"]
        if self.strategy.has_generation and sub in (None, "scale") and new.get("spec") != old.get("spec"):
            meta["generation"] = int(old_meta.get("generation") or 1) + 1
        if sub is None:
            errs = self.strategy.validate_update(new, old)
        elif sub == "status":
            errs = self.strategy.validate_status_update(new, old)
        else:
            errs = self.strategy.validate_subresource(sub, new, old)
        if errs:
            raise self._invalid(new, errs)
        meta["resourceVersion"] = old_meta.get("resourceVersion")
        if _same_ignoring_managed_fields(new, old):
            return None
        if self.field_tracker is not None and opts.track_fields:
            self.field_tracker(old, new, opts.field_manager, opts.subresource)
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and \
                not self.strategy.blocks_deletion(new) and int(meta.get("deletionGracePeriodSeconds") or 0) == 0:
            return _DELETE_NOW
        return new

    # --- delete ------------------------------------------------------------------------------

    async def delete(self, namespace: str | None, name: str, opts: DeleteOptions) -> tuple[Entry, bool]:
        """Delete, or mark for deletion. Returns (the object as it now is or was, deleted now)."""
        key = self.key(namespace, name)
        current = await self._read(key)
        for _ in range(_UPDATE_ATTEMPTS):
            if current is None:
                raise errors.not_found(self.ri, name)
            obj = copy_obj(current)
            meta = obj["metadata"]
            if opts.precondition_uid and opts.precondition_uid != meta.get("uid"):
                raise errors.conflict(self.ri, name, f"Precondition failed: UID in precondition: "
                                      f"{opts.precondition_uid}, UID in object meta: {meta.get('uid')}")
            if opts.precondition_rv and opts.precondition_rv != str(current.rv):
                raise errors.conflict(self.ri, name, "Precondition failed: ResourceVersion in precondition: "
                                      f"{opts.precondition_rv}, ResourceVersion in object meta: {current.rv}")
            finalizers = list(meta.get("finalizers") or [])
            policy = opts.propagation_policy
            if policy == "Foreground" and FOREGROUND_FINALIZER not in finalizers:
                finalizers = [f for f in finalizers if f != ORPHAN_FINALIZER] + [FOREGROUND_FINALIZER]
            elif policy == "Orphan" and ORPHAN_FINALIZER not in finalizers:
                finalizers = [f for f in finalizers if f != FOREGROUND_FINALIZER] + [ORPHAN_FINALIZER]
            elif policy == "Background":
                finalizers = [f for f in finalizers if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)] \
                    if not meta.get("deletionTimestamp") else finalizers
            grace = self.strategy.grace_period(obj, opts.grace_period_seconds)
            already = meta.get("deletionTimestamp")
            if already:
                # A second delete may only shorten the grace period (or change nothing).
                old_grace = int(meta.get("deletionGracePeriodSeconds") or 0)
                if grace >= old_grace and finalizers == list(meta.get("finalizers") or []):
                    return current, False
                grace = min(grace, old_grace)
            if not finalizers and grace == 0 and not self.strategy.blocks_deletion(obj):
                if opts.dry_run:
                    return current, True
                try:
                    return await self._delete_now(key, current), True
                except RevisionMismatch as m:
                    # Changed meanwhile (a finalizer added?): decide again on the newer object.
                    current = decode(m.current) if m.current is not None else None
                    continue
            meta["finalizers"] = finalizers or None
            if meta["finalizers"] is None:
                del meta["finalizers"]
            if not already or grace < int(meta.get("deletionGracePeriodSeconds") or 0):
                meta["deletionTimestamp"] = metautil.format_time(
                    metautil.utcnow() + datetime.timedelta(seconds=grace))
            meta["deletionGracePeriodSeconds"] = grace
            self.strategy.mark_deleting(obj)
            if opts.dry_run:
                return Entry(key, orjson.dumps(obj), current.rv, obj), False
            stored = encode(obj)
            try:
                rev = await self.storage.update(key, stored, current.rv)
            except RevisionMismatch as m:
                current = decode(m.current) if m.current is not None else None
                continue
            except StorageError as e:
                raise storage_error(e) from e
            return self._written(stamp(key, obj, stored, rev)), False
        raise errors.conflict(self.ri, name, "too many concurrent updates; please try again")

    async def _delete_now(self, key: str, current: Entry) -> Entry:
        """Delete ``key`` guarded by ``current``'s revision; the deleted object at the delete's revision.

        A lost race raises :class:`RevisionMismatch`: the caller starts over from the value etcd
        returned, so a write that raced (a new finalizer, a status update) is never ignored.
        """
        try:
            rev = await self.storage.delete(key, current.rv)
        except RevisionMismatch:
            raise
        except StorageError as e:
            raise storage_error(e) from e
        return at_revision(current, rev)

    # --- helpers -----------------------------------------------------------------------------

    def _written(self, entry: Entry) -> Entry:
        self.cache.remember(entry)
        return entry

    def _invalid(self, obj: Obj, errs: builtins.list[FieldError]) -> APIError:
        name = (obj.get("metadata") or {}).get("name") or (obj.get("metadata") or {}).get("generateName") or ""
        # Kubernetes names grouped kinds with their group: 'Lease.coordination.k8s.io "x" is invalid'.
        kind = f"{self.ri.kind}.{self.ri.group}" if self.ri.group else self.ri.kind
        return errors.invalid(self.ri, name, invalid_message(kind, name, errs), [e.cause() for e in errs])


_DELETE_NOW: Final = object()


def _same_ignoring_managed_fields(new: Obj, old: Obj) -> bool:
    """True when a write would change nothing but field-ownership bookkeeping."""
    if new == old:
        return True
    nm, om = new.get("metadata") or {}, old.get("metadata") or {}
    if nm.get("managedFields") == om.get("managedFields"):
        return False

    def strip(o: Obj, m: dict[str, Any]) -> Obj:
        return {**o, "metadata": {k: v for k, v in m.items() if k != "managedFields"}}
    return strip(new, nm) == strip(old, om)
