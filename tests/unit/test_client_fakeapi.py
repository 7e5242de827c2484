"""An in-memory stand-in for the APIServer's REST semantics, for unit tests of client users.

``FakeApi`` is an httpx transport handler: objects by path, a global
resourceVersion counter, 404/409 Status answers worded as Kubernetes words
them, guarded updates, JSON merge patches, bindings. It serves the leader
election and event recorder unit tests; the tests at the bottom pin the
semantics those tests rely on, so the fake cannot drift silently.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest

from machinery.api.kinds import LEASES, PODS, ResourceInfo, lookup
from machinery.client import AlreadyExists, Client, ClientConfig, Conflict, NotFound

#: A hook that may answer (or raise) instead of the fake; returning None lets the fake answer.
Hook = Callable[[httpx.Request], httpx.Response | None]


class FakeApi:
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.requests: list[httpx.Request] = []
        self.hooks: list[Hook] = []
        self._rv = itertools.count(100)
        self._uid = itertools.count(1)

    def client(self) -> Client:
        return Client(ClientConfig("http://fake"), transport=httpx.MockTransport(self))

    def get(self, resource: ResourceInfo, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self.objects.get(resource.path(namespace, name))

    def of(self, resource: ResourceInfo) -> list[dict[str, Any]]:
        prefix = resource.api_prefix + "/"
        return [o for p, o in self.objects.items() if p.startswith(prefix) and p.split("/")[-2] == resource.plural]

    def put(self, resource: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        """Store an object directly (as another client's write would), bumping its resourceVersion."""
        meta = obj["metadata"]
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(next(self._rv))
        self.objects[resource.path(meta.get("namespace"), meta["name"])] = obj
        return obj

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        for hook in self.hooks:
            answer = hook(request)
            if answer is not None:
                return answer
        resource, namespace, name, sub = _parse(request.url.path)
        body = orjson.loads(request.content) if request.content else None
        path = resource.path(namespace, name) if name else ""
        current = self.objects.get(path)
        gr = resource.group_resource
        if request.method == "GET" and name is None:
            items = [o for p, o in self.objects.items()
                     if p.startswith(resource.path(namespace) + "/") and p.count("/") == resource.path(namespace).count("/") + 1]
            return httpx.Response(200, json={"kind": resource.list_kind, "apiVersion": resource.api_version,
                                             "metadata": {"resourceVersion": str(next(self._rv))}, "items": items})
        if request.method == "POST" and sub == "binding":
            if current is None:
                return _status(404, "NotFound", f'{gr} "{name}" not found')
            current.setdefault("spec", {})["nodeName"] = body["target"]["name"]
            current["metadata"]["resourceVersion"] = str(next(self._rv))
            return httpx.Response(201, json={"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})
        if request.method == "POST":
            name = body["metadata"]["name"]
            path = resource.path(namespace, name)
            if path in self.objects:
                return _status(409, "AlreadyExists", f'{gr} "{name}" already exists')
            body["metadata"].update(resourceVersion=str(next(self._rv)), uid=f"uid-{next(self._uid)}")
            if namespace:
                body["metadata"]["namespace"] = namespace
            self.objects[path] = body
            return httpx.Response(201, json=body)
        if current is None:
            return _status(404, "NotFound", f'{gr} "{name}" not found')
        if request.method == "GET":
            return httpx.Response(200, json=current)
        if request.method == "PUT":
            sent = body["metadata"].get("resourceVersion")
            if sent and sent != current["metadata"]["resourceVersion"]:
                return _status(409, "Conflict", f'Operation cannot be fulfilled on {gr} "{name}": the object has '
                                                "been modified; please apply your changes to the latest version "
                                                "and try again")
            body["metadata"].update(resourceVersion=str(next(self._rv)), uid=current["metadata"].get("uid"))
            self.objects[path] = body
            return httpx.Response(200, json=body)
        if request.method == "PATCH":
            patched = _merge(copy.deepcopy(current), body)
            patched["metadata"]["resourceVersion"] = str(next(self._rv))
            self.objects[path] = patched
            return httpx.Response(200, json=patched)
        if request.method == "DELETE":
            del self.objects[path]
            return httpx.Response(200, json={"kind": "Status", "apiVersion": "v1", "status": "Success"})
        return _status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


def _parse(path: str) -> tuple[ResourceInfo, str | None, str | None, str | None]:
    parts = path.strip("/").split("/")
    group, version, rest = ("", parts[1], parts[2:]) if parts[0] == "api" else (parts[1], parts[2], parts[3:])
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource = lookup(group, version, rest[0])
    assert resource is not None, f"unknown resource in {path}"
    return resource, namespace, rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else None


def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    if not isinstance(target, dict):
        target = {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = _merge(target.get(key), value)
    return target


def _status(code: int, reason: str, message: str) -> httpx.Response:
    return httpx.Response(code, json={"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                      "message": message, "reason": reason, "code": code})


# --- the fake's own contract -------------------------------------------------------------------

async def test_fake_create_get_update_conflict_delete() -> None:
    api = FakeApi()
    async with api.client() as client:
        lease = await client.create(LEASES, {"metadata": {"name": "l", "namespace": "kube-system"}, "spec": {}})
        rv = lease.metadata.resource_version
        with pytest.raises(AlreadyExists, match='leases.coordination.k8s.io "l" already exists'):
            await client.create(LEASES, {"metadata": {"name": "l", "namespace": "kube-system"}})
        updated = await client.update(LEASES, {"metadata": {"name": "l", "namespace": "kube-system",
                                                            "resourceVersion": rv}, "spec": {"holderIdentity": "a"}})
        assert updated.metadata.resource_version != rv
        with pytest.raises(Conflict, match="the object has been modified"):
            await client.update(LEASES, {"metadata": {"name": "l", "namespace": "kube-system", "resourceVersion": rv}})
        assert len((await client.list(LEASES, namespace="kube-system")).items) == 1
        await client.delete(LEASES, "l", namespace="kube-system")
        with pytest.raises(NotFound, match='leases.coordination.k8s.io "l" not found'):
            await client.get(LEASES, "l", namespace="kube-system")


async def test_fake_merge_patch_and_binding() -> None:
    api = FakeApi()
    async with api.client() as client:
        await client.create(PODS, {"metadata": {"name": "p", "namespace": "ns", "labels": {"a": "1", "b": "2"}},
                                   "spec": {"containers": [{"name": "c", "image": "i"}]}})
        patched = await client.patch(PODS, "p", {"metadata": {"labels": {"a": None, "c": "3"}}}, namespace="ns")
        assert patched.metadata.labels == {"b": "2", "c": "3"}
        await client.bind("ns", "p", "node-1")
        assert api.get(PODS, "p", "ns")["spec"]["nodeName"] == "node-1"
