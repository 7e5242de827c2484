"""kube-aggregator's availability controller: is each APIService's backend answering?

Every :data:`TICK` seconds the controller reads the APIServices from the
watch cache. A local one (no ``spec.service``) is ``Available`` (``Local``).
For one with a Service, it resolves the backend through the Service's
Endpoints (:func:`~apiserver.aggregator.apiservice.resolve_backend`) and,
when the APIService is new, its backend changed, or :data:`CHECK_INTERVAL`
has passed, asks the backend for its discovery document
(``/apis/<group>/<version>``) within :data:`CHECK_TIMEOUT`. A 2xx JSON
answer makes the APIService available (``Passed``, ``all checks passed``)
and is kept for aggregated discovery; anything else makes it unavailable
with kube-aggregator's reason and message (``FailedDiscoveryCheck``,
``failing or missing response from <url>: ...``).

The condition is written to the APIService's status (through the status
strategy, as ``kube-apiserver``) only when it changes; :attr:`backends` is
what the aggregation layer proxies and lists, replaced whole after each tick.

Concurrency: one task; the checks of one tick run concurrently.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import httpx

from apiserver.aggregator.apiservice import (
    LOCAL_MESSAGE,
    Backend,
    Unavailable,
    condition_differs,
    resolve_backend,
    with_condition,
)
from apiserver.errors import APIError
from apiserver.registry.apiregistration.apiservices import STATUS_STRATEGY
from apiserver.registry.store import WriteOptions
from apiserver.registry.strategy import Obj
from apiserver.storage.objects import Entry
from machinery.api import kinds

if TYPE_CHECKING:
    from apiserver.server import APIServer

log = logging.getLogger("apiserver.aggregator")

TICK: Final = 1.0
CHECK_INTERVAL: Final = 5.0
CHECK_TIMEOUT: Final = 5.0
FIELD_MANAGER: Final = "kube-apiserver"


@dataclass(slots=True)
class _Checked:
    url: str
    at: float
    available: bool
    reason: str
    message: str
    resources: Mapping[str, Any] | None


async def check(http: httpx.AsyncClient, url: str, group: str, version: str) -> _Checked:
    """One discovery check of the backend at ``url``."""
    target = f"{url}/apis/{group}/{version}"
    try:
        response = await http.get(target, timeout=CHECK_TIMEOUT, headers={"Accept": "application/json"})
        if not 200 <= response.status_code < 300:
            raise ValueError(f"bad status from {target}: {response.status_code}")
        document = response.json()
        if not isinstance(document, dict):
            raise TypeError(f"{target} did not answer an APIResourceList")
    except (httpx.HTTPError, ValueError, TypeError) as err:
        return _Checked(url, time.monotonic(), False, "FailedDiscoveryCheck",
                        f"failing or missing response from {target}: {err}", None)
    return _Checked(url, time.monotonic(), True, "Passed", "all checks passed", document)


class AvailabilityController:
    """The APIServices' Available conditions, and the backends the aggregation layer serves."""

    def __init__(self, server: APIServer, *, tick: float = TICK, interval: float = CHECK_INTERVAL) -> None:
        self.server = server
        self.tick = tick
        self.interval = interval
        #: (group, version) -> backend, from the last tick.
        self.backends: dict[tuple[str, str], Backend] = {}
        self._checked: dict[str, _Checked] = {}

    def _lookup(self, info: kinds.ResourceInfo[Any]) -> Any:
        cache = self.server.store(info).cache

        def get(namespace: str, name: str) -> Mapping[str, Any] | None:
            entry = cache.get(info.etcd_key(namespace, name))
            return entry.obj if entry is not None else None
        return get

    async def run(self, http: httpx.AsyncClient) -> None:
        cache = self.server.store(kinds.API_SERVICES).cache
        await cache.ready.wait()
        while True:
            try:
                await self.sync(http, list(cache.sorted_entries()))
            except Exception:  # never let one bad object stop the controller
                log.exception("checking APIServices failed")
            await asyncio.sleep(self.tick)

    async def sync(self, http: httpx.AsyncClient, entries: list[Entry]) -> None:
        services, endpoints = self._lookup(kinds.SERVICES), self._lookup(kinds.ENDPOINTS)
        now = time.monotonic()
        outcomes: dict[str, tuple[bool, str, str]] = {}
        due: dict[str, tuple[str, str, str]] = {}
        for entry in entries:
            obj = entry.obj
            name = (obj.get("metadata") or {}).get("name", "")
            spec = obj.get("spec") or {}
            if not spec.get("service"):
                outcomes[name] = (True, "Local", LOCAL_MESSAGE)
                continue
            try:
                url = resolve_backend(spec, services, endpoints)
            except Unavailable as why:
                self._checked.pop(name, None)
                outcomes[name] = (False, why.reason, why.message)
                continue
            last = self._checked.get(name)
            if last is None or last.url != url or now - last.at >= self.interval:
                due[name] = (url, str(spec.get("group") or ""), str(spec.get("version") or ""))
        if due:
            results = await asyncio.gather(*(check(http, *args) for args in due.values()))
            self._checked.update(zip(due, results, strict=True))
        backends: dict[tuple[str, str], Backend] = {}
        for entry in entries:
            obj = entry.obj
            name = (obj.get("metadata") or {}).get("name", "")
            spec = obj.get("spec") or {}
            checked = self._checked.get(name) if name not in outcomes else None
            if checked is not None:
                outcomes[name] = (checked.available, checked.reason, checked.message)
            available, reason, message = outcomes[name]
            backends[(str(spec.get("group") or ""), str(spec.get("version") or ""))] = Backend(
                name, str(spec.get("group") or ""), str(spec.get("version") or ""), not spec.get("service"),
                checked.url if checked is not None else None, available,
                int(spec.get("groupPriorityMinimum") or 0), int(spec.get("versionPriority") or 0),
                checked.resources if checked is not None else None)
            if condition_differs(obj, available, reason, message):
                await self._write(name, available, reason, message)
        live = {(e.obj.get("metadata") or {}).get("name", "") for e in entries}
        for gone in set(self._checked) - live:
            del self._checked[gone]
        self.backends = backends

    async def _write(self, name: str, available: bool, reason: str, message: str) -> None:
        store = self.server.store(kinds.API_SERVICES)

        def mutate(obj: Obj, _current: Entry) -> Obj:
            return with_condition(obj, available, reason, message)

        try:
            await store.using(STATUS_STRATEGY).update_with(
                None, name, mutate, WriteOptions(field_manager=FIELD_MANAGER, subresource="status"))
        except APIError as err:
            if err.code != 404:
                log.warning("could not write the status of APIService %s: %s", name, err)
            return
        if available:
            log.info("APIService %s is available (%s)", name, reason)
        else:
            log.warning("APIService %s is not available: %s: %s", name, reason, message)
