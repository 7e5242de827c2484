"""The generic store: create, read, update, delete, list and watch for any resource.

This is kube-apiserver's ``genericregistry.Store`` in small. A Strategy says
what is specific to a kind; everything here is the same for all of them:

- **Reads.** A GET reads etcd (a consistent read); ``resourceVersion=0`` may be
  served from the watch cache. Lists with a resourceVersion are served from the
  watch cache; consistent ones (none given) from the cache once it has caught
  up with etcd's current revision, as kube-apiserver does since 1.31, when etcd
  can prove that cheaply or the list is large (``_consistent_from_cache``), and
  from etcd otherwise; paginated ones (``limit``) read etcd at a fixed revision
  so that every page belongs to one snapshot.
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
import copy
import datetime
import logging
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

import orjson

from apiserver import errors
from apiserver.errors import APIError
from apiserver.metrics import CONSISTENT_READS
from apiserver.registry.strategy import FinishFunc, Obj, Strategy
from apiserver.storage.etcd import (
    Compacted,
    EtcdStorage,
    KeyExists,
    RequestTooLarge,
    RevisionMismatch,
    StorageError,
    StorageTimeout,
    Unavailable,
)
from apiserver.storage.objects import Entry, at_revision, decode, encode, stamp
from apiserver.validation.field import FieldError, invalid_message
from apiserver.watchcache import CacheClosed, Filter, NotFresh, WatchCache
from machinery.api import meta as metautil
from machinery.api.kinds import ResourceInfo

if TYPE_CHECKING:
    from apiserver.admission.chain import UserInfo
    from apiserver.authorization.authorizer import Authorizer, RuleResolver
    from apiserver.settings import Settings

log = logging.getLogger("apiserver.store")

#: A consistent list of a scope (a namespace, or the whole resource) holding this many objects is served
#: from the watch cache once it is fresh rather than read from etcd (see ``Store._consistent_from_cache``).
#: Reading etcd costs ~100 µs per Pod; waiting for an idle cache, up to one 250 ms progress interval.
CONSISTENT_LIST_FROM_CACHE_MIN_OBJECTS: Final = 1_000

#: The alphabet and length kube-apiserver uses for generateName suffixes.
_NAME_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_NAME_SUFFIX_LEN: Final = 5
_GENERATE_NAME_ATTEMPTS: Final = 8
#: A grace period of up to int64 seconds is accepted; the deletionTimestamp stops at ~300 years from now.
_LATEST_DELETION_SECONDS: Final = 10**10

FOREGROUND_FINALIZER: Final = "foregroundDeletion"
ORPHAN_FINALIZER: Final = "orphan"

#: Called after a write is prepared, to record field ownership (metadata.managedFields).
FieldTracker = Callable[[Obj | None, Obj, str, str | None], None]


class StoreContext(Protocol):
    """What strategies' hooks and admission may reach of the APIServer (it is the APIServer)."""

    settings: Settings
    storage: EtcdStorage

    # The request authorizer and RBAC's rule resolver (RBAC's escalation checks ask them about the requester).
    @property
    def authorizer(self) -> Authorizer: ...

    @property
    def rule_resolver(self) -> RuleResolver: ...

    def store(self, info: ResourceInfo[Any]) -> Store: ...


class Admission(Protocol):
    """The admission chain bound to one request, as the store calls it (kube-apiserver's admission.Interface).

    ``mutate`` runs on the object the request produced, before the strategy
    prepares and validates it; ``validate`` runs after the strategy's
    validation, just before the write; ``validate_delete`` before a delete.
    Each raises an APIError to refuse. ``user`` is who sent the request.
    """

    user: UserInfo

    async def mutate(self, obj: Obj, old: Obj | None) -> None: ...

    async def validate(self, obj: Obj, old: Obj | None) -> None: ...

    async def validate_delete(self, obj: Obj) -> None: ...


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
    if isinstance(e, RequestTooLarge):
        return errors.APIError(413, "RequestEntityTooLarge", f"etcdserver: request is too large: {e}")
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
        if not isinstance(data, dict) or data.get("v") != "meta.k8s.io/v1" or not isinstance(data.get("rv"), int) \
                or not 0 <= data["rv"] < 2**63:
            raise ValueError("bad version")
        start = data.get("start")
        if not isinstance(start, str) or ".." in start.split("/"):
            raise ValueError("bad start key")
        return int(data["rv"]), start
    except (ValueError, binascii.Error, orjson.JSONDecodeError) as e:
        raise errors.bad_request(f"continue key is not valid: {e}") from e


class Store:
    """CRUD, list and watch for one resource, on etcd and its watch cache.

    A store is configuration: its resource, its strategy, its cache. A
    subresource that writes with other rules (``/status``) uses
    :meth:`using` to get the same store with another strategy.
    """

    def __init__(self, info: ResourceInfo[Any], strategy: Strategy, storage: EtcdStorage, cache: WatchCache, *,
                 context: StoreContext | None = None, field_tracker: FieldTracker | None = None,
                 ttl_seconds: int = 0) -> None:
        self.strategy = strategy
        self.ri = info
        self.storage = storage
        self.cache = cache
        self.context = context
        self.field_tracker = field_tracker
        self.ttl_seconds = ttl_seconds
        self._lease: list[tuple[int, float]] = []

    def using(self, strategy: Strategy) -> Store:
        """This store with another strategy (a status store); the cache and the event lease are shared."""
        other = copy.copy(self)
        other.strategy = strategy
        return other

    def key(self, namespace: str | None, name: str) -> str:
        return self.ri.etcd_key(namespace, name)

    def namespace_filter(self, namespace: str | None, **conditions: Any) -> Filter:
        """A list or watch filter for one namespace (every one with ``None``), with its etcd key prefix."""
        prefix = self.ri.etcd_prefix(namespace) if namespace else None
        return Filter(namespace=namespace, key_prefix=prefix, **conditions)

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

    async def read(self, namespace: str | None, name: str) -> Entry | None:
        """etcd's object (a consistent read), or None."""
        return await self._read(self.key(namespace, name))

    async def lookup(self, namespace: str | None, name: str) -> Entry | None:
        """The watch cache's object, or etcd's when the cache does not have it; None when neither has.

        What admission plugins read: an object created a moment ago (a namespace, a
        PriorityClass, a ServiceAccount, a Pod a kubelet just saw through another
        APIServer) may not have reached this cache yet, and refusing a request for
        that would be wrong.
        """
        entry = self.cache.get(self.key(namespace, name))
        return entry if entry is not None else await self._read(self.key(namespace, name))

    async def list(self, flt: Filter, *, limit: int = 0, continue_token: str | None = None,
                   resource_version: str | None = None, exact: bool = False) -> ListResult:
        consistent = resource_version in (None, "")
        if continue_token or exact or (consistent and (limit > 0 or not self._consistent_from_cache(flt))):
            return await self._list_from_etcd(flt, limit=limit, continue_token=continue_token,
                                              resource_version=resource_version, exact=exact)
        try:
            if resource_version not in (None, "", "0"):
                await self.cache.wait_for(int(resource_version))
            elif resource_version != "0":
                try:
                    await self.cache.wait_fresh()
                except NotFresh:
                    # The cache did not catch up in time: read etcd, as kube-apiserver falls back.
                    result = await self._list_from_etcd(flt, limit=0, continue_token=None, resource_version=None,
                                                        exact=False)
                    CONSISTENT_READS.labels(f"/{self.ri.etcd_resource}", "true", "true").inc()
                    return result
                CONSISTENT_READS.labels(f"/{self.ri.etcd_resource}", "true", "false").inc()
            else:
                await self.cache.wait_ready()
        except CacheClosed:
            # The resource stopped being served while this list was in flight (its CRD went):
            # answer it from etcd, as kube-apiserver lets requests in flight finish on the old storage.
            return await self._list_from_etcd(flt, limit=0, continue_token=None, resource_version=None, exact=False)
        except NotFresh as e:
            raise errors.too_large_resource_version(e.requested, e.current) from e
        except StorageError as e:
            raise storage_error(e) from e
        return ListResult(self.cache.list(flt), self.cache.rv)

    def _consistent_from_cache(self, flt: Filter) -> bool:
        """Whether a consistent list of one snapshot (no ``limit``) is served from the watch cache.

        kube-apiserver (ConsistentListFromCache) serves it from the cache once the cache has
        caught up with etcd's current revision, proven by a progress request when the resource
        is idle; with an etcd whose progress requests can overtake events (before 3.5.13) it
        reads etcd. kubesim waits on etcd's periodic progress notifications instead (at most
        ``WATCH_PROGRESS_NOTIFY_INTERVAL``, 250 ms, when the resource is idle; a resource being
        written catches up within milliseconds), and does so when reading etcd would cost more:
        for lists of at least :data:`CONSISTENT_LIST_FROM_CACHE_MIN_OBJECTS` objects.
        """
        if self.storage.progress_requests_reliable:
            return True
        cache = self.cache
        return cache.ready.is_set() and cache.count(flt.namespace) >= CONSISTENT_LIST_FROM_CACHE_MIN_OBJECTS

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

    async def create(self, namespace: str | None, obj: Obj, opts: WriteOptions, *,
                     admission: Admission | None = None) -> Entry:
        meta = obj.setdefault("metadata", {})
        if self.ri.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        name = meta.get("name") or ""
        prefix = meta.get("generateName") or ""
        if not name and not prefix:
            raise self._invalid(obj, [FieldError.required("metadata.name", "name or generateName is required")])
        if admission is not None:
            await self._authorize_write(admission, obj, None)
            await admission.mutate(obj, None)
        strategy = self.strategy
        finish = await self._begin(strategy.begin_create, obj, dry_run=opts.dry_run)
        ok = False
        try:
            # The system fields and a generated name come first, as kube-apiserver's store sets them
            # "as early as possible": a strategy may use them (a Job's selector names its own uid).
            meta = obj.setdefault("metadata", {})
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = metautil.now_time()
            generated = not name
            if generated:
                meta["name"] = name = generate_name(prefix)
            strategy.prepare_for_create(obj)
            strategy.default(obj)
            meta = obj.setdefault("metadata", {})
            for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
                meta.pop(k, None)
            drop_empty_metadata(meta)
            if strategy.has_generation:
                meta["generation"] = 1
            else:
                meta.pop("generation", None)
            errs = strategy.validate(obj)
            if errs:
                raise self._invalid(obj, errs)
            opts.warnings.extend(strategy.warnings_on_create(obj))
            if admission is not None:
                await admission.validate(obj, None)
            if self.field_tracker is not None and opts.track_fields:
                self.field_tracker(None, obj, opts.field_manager, opts.subresource)
            if opts.dry_run:
                ok = True
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
                ok = True
                return self._written(stamp(key, obj, stored, rev))
            raise AssertionError("unreachable: the last attempt returns or raises")
        finally:
            await finish(ok)

    async def _authorize_write(self, admission: Admission, obj: Obj, old: Obj | None) -> None:
        """The strategy's check of who writes (kube-apiserver's policy-based storage, RBAC's escalation check)."""
        if self.context is not None:
            await self.strategy.authorize_write(self.context, admission.user, obj, old)

    async def _begin(self, hook: Callable[..., Awaitable[FinishFunc]], *args: Any, dry_run: bool) -> FinishFunc:
        if self.context is None:
            return _finish_nothing
        return await hook(self.context, *args, dry_run=dry_run)

    async def _ttl_lease(self) -> int:
        """An etcd lease for objects that expire (Events), reused for a minute like kube-apiserver's.

        The lease is kept in a list shared with every :meth:`using` copy of this store.
        """
        if not self.ttl_seconds:
            return 0
        now = time.monotonic()
        if not self._lease or now - self._lease[0][1] > 60:
            try:
                lease_id = await self.storage.grant_lease(self.ttl_seconds + 60)
            except StorageError as e:
                raise storage_error(e) from e
            self._lease[:] = [(lease_id, now)]
        return self._lease[0][0]

    # --- update ------------------------------------------------------------------------------

    async def update_with(self, namespace: str | None, name: str,
                          mutate: Callable[[Obj, Entry], Obj], opts: WriteOptions, *,
                          expect_rv: Callable[[Obj], str | None] | None = None,
                          create: Callable[[], Obj] | None = None,
                          create_on_update: bool | None = None,
                          admission: Admission | None = None) -> tuple[Entry, bool]:
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
        # Lost races are retried until one write wins, as GuaranteedUpdate loops: a request that waits
        # too long ends with the request timeout's 504, never a 409 the client did not cause.
        while True:
            if current is None:
                allowed = self.strategy.allow_create_on_update if create_on_update is None else create_on_update
                if create is not None and allowed:
                    try:
                        return await self.create(namespace, create(), opts, admission=admission), True
                    except APIError as e:
                        if e.reason != "AlreadyExists":
                            raise
                        current = await self._read(key)
                        continue
                raise errors.not_found(self.ri, name)
            # The cache may lag behind etcd by a few milliseconds. Whatever the cached object makes fail
            # (a resourceVersion precondition, validation against the old object, admission) or makes a
            # no-op is decided again on etcd's copy before it is answered, as GuaranteedUpdate does when
            # its first state came from the watch cache.
            try:
                new = mutate(copy_obj(current), current)
                wanted = expect_rv(new) if expect_rv is not None else None
                if wanted:
                    if wanted != str(current.rv):
                        raise errors.stale(self.ri, name)
                elif not self.strategy.allow_unconditional_update and expect_rv is not None:
                    raise self._invalid(new, [FieldError.invalid(
                        "metadata.resourceVersion", "", "must be specified for an update")])
                if admission is not None:
                    await self._authorize_write(admission, new, current.obj)
                    await admission.mutate(new, current.obj)
            except APIError:
                if from_cache:
                    current, from_cache = await self._read(key), False
                    continue
                raise
            finish = await self._begin(self.strategy.begin_update, new, current.obj, dry_run=opts.dry_run)
            ok = False
            try:
                try:
                    result = await self._prepare_update(new, current, opts, admission)
                except APIError:
                    if from_cache:
                        current, from_cache = await self._read(key), False
                        continue
                    raise
                if result is None:
                    if from_cache:
                        current, from_cache = await self._read(key), False
                        continue
                    ok = True
                    return current, False  # nothing changed: no write
                if result is _DELETE_NOW:
                    # The last finalizer went: the object goes. A lost race re-applies the change
                    # to the newer object (a 409 if the client named the resourceVersion it saw).
                    try:
                        gone = await self._delete_now(key, current)
                    except RevisionMismatch as m:
                        current = decode(m.current) if m.current is not None else None
                        from_cache = False
                        continue
                    ok = True
                    return gone, False
                if opts.dry_run:
                    ok = True
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
                ok = True
                return self._written(stamp(key, new, stored, rev)), False
            finally:
                await finish(ok)

    async def _prepare_update(self, new: Obj, current: Entry, opts: WriteOptions,
                              admission: Admission | None) -> Obj | object | None:
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

        strategy = self.strategy
        strategy.prepare_for_update(new, old)
        strategy.default(new)
        meta = new.setdefault("metadata", {})
        errs = strategy.validate_update(new, old)
        if errs:
            raise self._invalid(new, errs)
        meta["resourceVersion"] = old_meta.get("resourceVersion")
        if _same_ignoring_managed_fields(new, old):
            return None
        opts.warnings.extend(strategy.warnings_on_update(new, old))
        if admission is not None:
            await admission.validate(new, old)
        if self.field_tracker is not None and opts.track_fields:
            self.field_tracker(old, new, opts.field_manager, opts.subresource)
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and \
                not strategy.blocks_deletion(new) and int(meta.get("deletionGracePeriodSeconds") or 0) == 0:
            return _DELETE_NOW
        return new

    # --- delete ------------------------------------------------------------------------------

    async def delete(self, namespace: str | None, name: str, opts: DeleteOptions, *,
                     admission: Admission | None = None) -> tuple[Entry, bool]:
        """Delete, or mark for deletion. Returns (the object as it now is or was, deleted now)."""
        key = self.key(namespace, name)
        current = await self._read(key)
        # Lost races are retried until one write wins, as GuaranteedUpdate loops: a request that waits
        # too long ends with the request timeout's 504, never a 409 the client did not cause.
        while True:
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
            if admission is not None:
                await admission.validate_delete(current.obj)
            finalizers = list(meta.get("finalizers") or [])
            policy = opts.propagation_policy
            if policy is None and not meta.get("deletionTimestamp") and FOREGROUND_FINALIZER not in finalizers:
                # No policy asked: the kind's default, which a finalizer already there overrides.
                policy = self.strategy.default_propagation_policy
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
                    metautil.utcnow() + datetime.timedelta(seconds=min(grace, _LATEST_DELETION_SECONDS)))
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

    async def _delete_now(self, key: str, current: Entry) -> Entry:
        """Delete ``key`` guarded by ``current``'s revision; the deleted object at the delete's revision.

        A lost race raises :class:`RevisionMismatch`: the caller starts over from the value etcd
        returned, so a write that raced (a new finalizer, a status update) is never ignored.
        Once deleted, the strategy's ``after_delete`` releases what the object held.
        """
        try:
            rev = await self.storage.delete(key, current.rv)
        except RevisionMismatch:
            raise
        except StorageError as e:
            raise storage_error(e) from e
        gone = at_revision(current, rev)
        if self.context is not None:
            try:
                await self.strategy.after_delete(self.context, gone.obj)
            except Exception:  # the object is gone; a release that failed is logged, not answered
                log.exception("releasing what %s held failed", key)
        return gone

    # --- helpers -----------------------------------------------------------------------------

    def _written(self, entry: Entry) -> Entry:
        self.cache.remember(entry)
        return entry

    def _invalid(self, obj: Obj, errs: builtins.list[FieldError]) -> APIError:
        name = (obj.get("metadata") or {}).get("name") or (obj.get("metadata") or {}).get("generateName") or ""
        # Kubernetes names grouped kinds with their group: 'Lease.coordination.k8s.io "x" is invalid'.
        return errors.invalid(self.ri, name, invalid_message(self.ri.group_kind, name, errs),
                              [e.cause() for e in errs])


_DELETE_NOW: Final = object()


async def _finish_nothing(_ok: bool) -> None:
    return None


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
