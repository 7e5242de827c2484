"""Stand-ins for the controller-manager's unit tests: scripted informers and an in-memory API.

- :class:`FakeInformers` replaces the InformerFactory: each informer is a real
  :class:`SharedInformer` fed by a scripted reflector, so the test decides when
  a list or a watch event arrives (and can hold one back, as a slow watch would);
- :class:`Api` is an httpx transport handler keeping objects by path, with
  ``generateName``, uid and resourceVersion preconditions on DELETE, merge and
  strategic merge patches of metadata, and Status answers; it records every
  request and lets a test fail chosen ones;
- :func:`context` builds a ControllerContext around both, on a FakeClock.

The tests at the bottom pin the fakes' own behaviour.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import pytest
from pydantic import BaseModel

from controller_manager.context import ControllerContext, Options
from machinery.api.kinds import PODS, ResourceInfo, lookup
from machinery.client import Client, ClientConfig, NotFound, WatchEvent
from machinery.client.clock import FakeClock
from machinery.client.objects import decode, meta_of
from machinery.events import EventBroadcaster
from machinery.informer import Listed, SharedInformer


class ScriptedReflector:
    def __init__(self, name: str) -> None:
        self.name = name
        self.items: asyncio.Queue[object] = asyncio.Queue()
        self.last_sync_resource_version = ""

    async def stream(self) -> AsyncGenerator[object, None]:
        while True:
            yield await self.items.get()


class FakeInformers:
    """Hands out informers fed by the test: ``list(resource, objs)`` then ``event(resource, type, obj)``."""

    def __init__(self) -> None:
        self.informers: dict[str, SharedInformer[Any]] = {}
        self._reflectors: dict[str, ScriptedReflector] = {}
        self._rv = itertools.count(1000)

    def informer(self, resource: ResourceInfo[Any], *, indexers: dict[str, Any] | None = None,
                 **_selectors: Any) -> SharedInformer[Any]:
        informer = self.informers.get(resource.plural)
        if informer is None:
            reflector = ScriptedReflector(resource.plural)
            informer = SharedInformer(None, resource, reflector=reflector)  # type: ignore[arg-type]
            self.informers[resource.plural] = informer
            self._reflectors[resource.plural] = reflector
        if indexers:
            informer.add_indexers({n: f for n, f in indexers.items() if not informer.store.has_index(n)})
        return informer

    def existing(self, resource: ResourceInfo[Any]) -> SharedInformer[Any] | None:
        return self.informers.get(resource.plural)

    def list(self, resource: ResourceInfo[Any], objects: list[dict[str, Any]]) -> None:
        self._reflectors[resource.plural].items.put_nowait(
            Listed([self._model(resource, o) for o in objects], str(next(self._rv))))

    def event(self, resource: ResourceInfo[Any], etype: str, obj: dict[str, Any]) -> None:
        model = self._model(resource, obj)
        self._reflectors[resource.plural].items.put_nowait(
            WatchEvent(etype, model, meta_of(model).resource_version or ""))  # type: ignore[arg-type]

    def _model(self, resource: ResourceInfo[Any], obj: dict[str, Any]) -> BaseModel:
        obj = copy.deepcopy(obj)
        obj.setdefault("metadata", {}).setdefault("resourceVersion", str(next(self._rv)))
        model: BaseModel = decode(resource.model, obj)
        return model

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        tasks = [asyncio.create_task(i.run()) for i in self.informers.values()]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


Rule = Callable[[httpx.Request], httpx.Response | None]


class Api:
    """An in-memory APIServer for unit tests; ``rules`` may answer a request before the store does."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self.rules: list[Rule] = []
        self._rv = itertools.count(1)
        self._names = itertools.count(1)

    def client(self) -> Client:
        return Client(ClientConfig("http://fake"), transport=httpx.MockTransport(self))

    def put(self, resource: ResourceInfo[Any], obj: dict[str, Any]) -> dict[str, Any]:
        """Store an object as another client would have created it; returns the stored copy."""
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{meta['name']}")
        meta["resourceVersion"] = str(next(self._rv))
        self.objects[resource.path(meta.get("namespace"), meta["name"])] = obj
        return obj

    def calls(self, method: str, marker: str = "") -> list[tuple[str, str, Any]]:
        return [r for r in self.requests if r[0] == method and marker in r[1]]

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body: Any = orjson.loads(request.content) if request.content else None
        path = request.url.path
        self.requests.append((request.method, path + (f"?{request.url.query.decode()}" if request.url.query
                                                      else ""), body))
        for rule in self.rules:
            answer = rule(request)
            if answer is not None:
                return answer
        resource, namespace, name, sub = _parse(path)
        if request.method == "POST":
            meta = body.setdefault("metadata", {})
            meta["name"] = name = meta.get("name") or f"{meta['generateName']}{next(self._names):05d}"
            meta["namespace"] = namespace
            meta["uid"] = f"uid-{name}"
            meta["resourceVersion"] = str(next(self._rv))
            self.objects[resource.path(namespace, name)] = body
            return httpx.Response(201, json=body)
        key = resource.path(namespace, name)
        current = self.objects.get(key)
        if current is None:
            return status(404, "NotFound", f'{resource.group_resource} "{name}" not found')
        if request.method == "GET":
            return httpx.Response(200, json=current)
        if request.method == "PUT":
            new = copy.deepcopy(body)
            if sub == "status":
                new = {**current, "status": body.get("status")}
            new["metadata"]["resourceVersion"] = str(next(self._rv))
            self.objects[key] = new
            return httpx.Response(200, json=new)
        if request.method == "PATCH":
            patched = _patch(copy.deepcopy(current), body)
            patched["metadata"]["resourceVersion"] = str(next(self._rv))
            self.objects[key] = patched
            return httpx.Response(200, json=patched)
        if request.method == "DELETE":
            pre = (body or {}).get("preconditions") or {}
            if pre.get("resourceVersion") not in (None, current["metadata"]["resourceVersion"]):
                return status(409, "Conflict", "Precondition failed: ResourceVersion")
            del self.objects[key]
            return httpx.Response(200, json={"kind": "Status", "apiVersion": "v1", "status": "Success"})
        return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


def status(code: int, reason: str, message: str, causes: list[dict[str, str]] | None = None) -> httpx.Response:
    details = {"causes": causes} if causes else {}
    return httpx.Response(code, json={"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                      "message": message, "reason": reason, "code": code, "details": details})


def _parse(path: str) -> tuple[ResourceInfo[Any], str | None, str | None, str | None]:
    parts = path.strip("/").split("/")
    group, version, rest = ("", parts[1], parts[2:]) if parts[0] == "api" else (parts[1], parts[2], parts[3:])
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource = lookup(group, version, rest[0])
    assert resource is not None, f"unknown resource in {path}"
    return resource, namespace, rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else None


def _patch(target: Any, patch: Any) -> Any:
    """Merge patch, plus the strategic ``$patch: delete`` of ownerReferences by uid (all the fakes need)."""
    if isinstance(patch, dict) and isinstance(target, dict):
        for key, value in patch.items():
            if value is None:
                target.pop(key, None)
            elif key == "ownerReferences":
                refs = [r for r in target.get(key) or [] if not any(
                    d.get("$patch") == "delete" and d["uid"] == r["uid"] for d in value)]
                target[key] = refs + [r for r in value if r.get("$patch") != "delete"
                                      and r["uid"] not in {x["uid"] for x in refs}]
            else:
                target[key] = _patch(target.get(key), value)
        return target
    return copy.deepcopy(patch)


def context(api: Api, informers: FakeInformers, clock: FakeClock | None = None, **options: Any) -> ControllerContext:
    client = api.client()
    return ControllerContext(client=client, informers=informers,  # type: ignore[arg-type]
                             events=EventBroadcaster(client), options=Options(**options),
                             clock=clock or FakeClock())


async def settle(rounds: int = 200) -> None:
    """Let every runnable task run until the loop is quiet (no real time passes)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


def pod(name: str, *, namespace: str = "ns", labels: dict[str, str] | None = None,
        owners: list[dict[str, Any]] | None = None, node: str | None = None,
        status: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    """A Pod in wire form; ``meta`` adds metadata fields (``finalizers=[...]``, ``deletionTimestamp=...``)."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                                "labels": labels or {}, **meta}
    if owners:
        metadata["ownerReferences"] = owners
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status or {}}


# --- the fakes' own contract -------------------------------------------------------------------

async def test_api_generates_names_and_checks_delete_preconditions() -> None:
    api = Api()
    async with api.client() as client:
        created = await client.create(PODS, {"metadata": {"generateName": "web-", "namespace": "ns"},
                                             "spec": {"containers": [{"name": "c", "image": "i"}]}})
        assert meta_of(created).name == "web-00001"
        with pytest.raises(Exception, match="Precondition failed"):
            await client.delete(PODS, "web-00001", namespace="ns", resource_version="0")
        await client.delete(PODS, "web-00001", namespace="ns")
        with pytest.raises(NotFound):
            await client.get(PODS, "web-00001", namespace="ns")


async def test_scripted_informers_deliver_lists_and_events() -> None:
    informers = FakeInformers()
    pods = informers.informer(PODS)
    informers.list(PODS, [pod("a")])
    async with informers.running():
        await settle()
        assert pods.has_synced and [p.metadata.name for p in pods.store.list()] == ["a"]
        informers.event(PODS, "DELETED", pod("a"))
        await settle()
        assert pods.store.list() == []
