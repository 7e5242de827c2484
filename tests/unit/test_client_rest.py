"""The typed client's requests and answers, against a scripted transport."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import httpx
import orjson
import pytest
from kubernetes.client import V1Lease, V1Node, V1ObjectMeta, V1Pod, V1PodSpec, V1Status

from machinery.api.kinds import LEASES, NODES, PODS
from machinery.client import (
    AlreadyExists,
    Client,
    ClientConfig,
    Conflict,
    Invalid,
    NotFound,
    PatchType,
    UnexpectedResponse,
    retry_on_conflict,
)
from machinery.client.clock import FakeClock

Handler = Callable[[httpx.Request], httpx.Response]
T = TypeVar("T")


def status(code: int, reason: str, message: str) -> dict[str, object]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


def pod_json(name: str = "web", rv: str = "5", ns: str = "default") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "resourceVersion": rv},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


class Recorder:
    """A transport that records requests and answers from a script."""

    def __init__(self, *answers: httpx.Response | Handler) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        return answer(request) if callable(answer) else answer

    def client(self, token: str | None = None) -> Client:
        return Client(ClientConfig("http://api", token), transport=httpx.MockTransport(self))

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]

    def body(self, i: int = -1) -> object:
        return orjson.loads(self.requests[i].content)


async def test_get_decodes_the_model_and_sends_token() -> None:
    rec = Recorder(httpx.Response(200, json=pod_json()))
    async with rec.client(token="abc") as client:
        pod = await client.get(PODS, "web", namespace="default")
    assert isinstance(pod, V1Pod) and pod.metadata.resource_version == "5"
    assert rec.last.method == "GET" and rec.last.url.path == "/api/v1/namespaces/default/pods/web"
    assert rec.last.headers["Authorization"] == "Bearer abc"


async def test_get_not_found_is_typed() -> None:
    rec = Recorder(httpx.Response(404, json=status(404, "NotFound", 'pods "web" not found')))
    async with rec.client() as client:
        with pytest.raises(NotFound, match='pods "web" not found'):
            await client.get(PODS, "web", namespace="default")


async def test_list_follows_continue_and_keeps_the_first_resource_version() -> None:
    rec = Recorder(
        httpx.Response(200, json={"kind": "PodList", "metadata": {"resourceVersion": "100", "continue": "t1"},
                                  "items": [pod_json("a"), pod_json("b")]}),
        httpx.Response(200, json={"kind": "PodList", "metadata": {"resourceVersion": "100", "continue": "t2"},
                                  "items": [pod_json("c")]}),
        httpx.Response(200, json={"kind": "PodList", "metadata": {"resourceVersion": "100"}, "items": []}),
    )
    async with rec.client() as client:
        result = await client.list(PODS, label_selector="app=web", resource_version="0", limit=2)
    assert [p.metadata.name for p in result.items] == ["a", "b", "c"]
    assert result.resource_version == "100"
    assert [dict(r.url.params) for r in rec.requests] == [
        {"labelSelector": "app=web", "resourceVersion": "0", "limit": "2"},
        {"labelSelector": "app=web", "limit": "2", "continue": "t1"},
        {"labelSelector": "app=web", "limit": "2", "continue": "t2"},
    ]
    assert rec.requests[0].url.path == "/api/v1/pods"


async def test_list_restarts_unpaged_when_the_continue_token_expired() -> None:
    rec = Recorder(
        httpx.Response(200, json={"metadata": {"resourceVersion": "100", "continue": "t1"}, "items": [pod_json("a")]}),
        httpx.Response(410, json=status(410, "Expired", "The provided continue parameter is too old")),
        httpx.Response(200, json={"metadata": {"resourceVersion": "200"}, "items": [pod_json("a"), pod_json("b")]}),
    )
    async with rec.client() as client:
        result = await client.list(PODS, namespace="default")
    assert [p.metadata.name for p in result.items] == ["a", "b"]
    assert result.resource_version == "200"
    assert dict(rec.last.url.params) == {}


async def test_create_posts_to_the_collection_with_type_meta_filled_in() -> None:
    rec = Recorder(lambda r: httpx.Response(201, json=dict(orjson.loads(r.content), metadata={
        **orjson.loads(r.content)["metadata"], "resourceVersion": "1"})))
    pod = V1Pod(metadata=V1ObjectMeta(name="web", namespace="prod"),
                spec=V1PodSpec(containers=[{"name": "c", "image": "nginx"}]))
    async with rec.client() as client:
        created = await client.create(PODS, pod, field_manager="me")
    assert created.metadata.resource_version == "1"
    assert rec.last.method == "POST" and rec.last.url.path == "/api/v1/namespaces/prod/pods"
    assert dict(rec.last.url.params) == {"fieldManager": "me"}
    assert rec.last.headers["Content-Type"] == "application/json"
    body = rec.body()
    assert body["apiVersion"] == "v1" and body["kind"] == "Pod"
    assert body["spec"]["containers"] == [{"name": "c", "image": "nginx"}]


async def test_create_of_a_cluster_scoped_object_ignores_namespace() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "resourceVersion": "3"}}
    rec = Recorder(httpx.Response(201, json=node))
    async with rec.client() as client:
        created = await client.create(NODES, {"metadata": {"name": "n1"}}, namespace="ignored")
    assert isinstance(created, V1Node)
    assert rec.last.url.path == "/api/v1/nodes"


async def test_create_already_exists() -> None:
    rec = Recorder(httpx.Response(409, json=status(409, "AlreadyExists", 'pods "web" already exists')))
    async with rec.client() as client:
        with pytest.raises(AlreadyExists):
            await client.create(PODS, pod_json())


async def test_namespaced_write_without_namespace_is_a_clear_error() -> None:
    async with Recorder().client() as client:
        with pytest.raises(ValueError, match="a namespace is required for pods"):
            await client.create(PODS, {"metadata": {"name": "x"}})


@pytest.mark.parametrize(("method", "path"), [
    pytest.param("update", "/api/v1/namespaces/default/pods/web", id="update"),
    pytest.param("update_status", "/api/v1/namespaces/default/pods/web/status", id="update-status"),
])
async def test_update_puts_the_object_with_its_resource_version(method: str, path: str) -> None:
    rec = Recorder(httpx.Response(200, json=pod_json(rv="6")))
    async with rec.client() as client:
        updated = await getattr(client, method)(PODS, pod_json(rv="5"))
    assert updated.metadata.resource_version == "6"
    assert rec.last.method == "PUT" and rec.last.url.path == path
    assert rec.body()["metadata"]["resourceVersion"] == "5"


async def test_update_conflict_and_invalid_are_typed() -> None:
    rec = Recorder(httpx.Response(409, json=status(409, "Conflict", "the object has been modified")),
                   httpx.Response(422, json=status(422, "Invalid", 'Pod "web" is invalid')))
    async with rec.client() as client:
        with pytest.raises(Conflict):
            await client.update(PODS, pod_json())
        with pytest.raises(Invalid):
            await client.update(PODS, pod_json())


@pytest.mark.parametrize(("patch_type", "patch", "params"), [
    pytest.param(PatchType.JSON, [{"op": "replace", "path": "/spec/nodeName", "value": "n"}], {}, id="json-patch"),
    pytest.param(PatchType.MERGE, {"metadata": {"labels": {"a": "b"}}}, {}, id="merge-patch"),
    pytest.param(PatchType.STRATEGIC_MERGE, {"metadata": {"labels": {"a": "b"}}}, {}, id="strategic-merge-patch"),
    pytest.param(PatchType.APPLY, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}},
                 {"fieldManager": "mgr", "force": "true"}, id="server-side-apply"),
])
async def test_patch_sends_each_content_type(patch_type: PatchType, patch: object, params: dict[str, str]) -> None:
    rec = Recorder(httpx.Response(200, json=pod_json(rv="9")))
    async with rec.client() as client:
        kwargs = {"field_manager": "mgr", "force": True} if patch_type is PatchType.APPLY else {}
        patched = await client.patch(PODS, "web", patch, namespace="default", patch_type=patch_type, **kwargs)
    assert patched.metadata.resource_version == "9"
    assert rec.last.method == "PATCH"
    assert rec.last.headers["Content-Type"] == patch_type.value
    assert dict(rec.last.url.params) == params
    assert rec.body() == patch


async def test_patch_status_subresource_with_yaml_apply() -> None:
    rec = Recorder(httpx.Response(200, json=pod_json()))
    async with rec.client() as client:
        await client.patch(PODS, "web", "status:\n  phase: Running\n", namespace="default",
                           patch_type=PatchType.APPLY, subresource="status", field_manager="kubelet")
    assert rec.last.url.path == "/api/v1/namespaces/default/pods/web/status"
    assert rec.last.content == b"status:\n  phase: Running\n"


async def test_delete_sends_options_and_preconditions() -> None:
    success = {"kind": "Status", "apiVersion": "v1", "status": "Success", "details": {"name": "web"}}
    rec = Recorder(httpx.Response(200, json=success), httpx.Response(200, json=pod_json(rv="8")))
    async with rec.client() as client:
        assert await client.delete(PODS, "web", namespace="default", uid="u1", resource_version="7",
                                   propagation_policy="Foreground", grace_period_seconds=0) is None
        graceful = await client.delete(PODS, "web", namespace="default")
    assert rec.body(0) == {"kind": "DeleteOptions", "apiVersion": "v1",
                           "preconditions": {"uid": "u1", "resourceVersion": "7"},
                           "propagationPolicy": "Foreground", "gracePeriodSeconds": 0}
    assert rec.body(1) == {"kind": "DeleteOptions", "apiVersion": "v1"}
    assert rec.requests[0].method == "DELETE"
    assert graceful is not None and graceful.metadata.resource_version == "8"


async def test_bind_posts_a_binding() -> None:
    rec = Recorder(httpx.Response(201, json={"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}))
    async with rec.client() as client:
        await client.bind("default", "web", "node-2", uid="u1")
    assert rec.last.url.path == "/api/v1/namespaces/default/pods/web/binding"
    assert rec.body() == {"apiVersion": "v1", "kind": "Binding",
                          "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
                          "target": {"apiVersion": "v1", "kind": "Node", "name": "node-2"}}


async def test_group_resources_use_the_apis_prefix() -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "kube-scheduler", "namespace": "kube-system", "resourceVersion": "1"},
             "spec": {"holderIdentity": "me", "renewTime": "2024-05-01T10:00:00.123456Z"}}
    rec = Recorder(httpx.Response(200, json=lease))
    async with rec.client() as client:
        got = await client.get(LEASES, "kube-scheduler", namespace="kube-system")
    assert isinstance(got, V1Lease) and got.spec.holder_identity == "me"
    assert rec.last.url.path == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"


async def test_a_success_that_is_not_json_is_unexpected() -> None:
    rec = Recorder(httpx.Response(200, content=b"<html>"))
    async with rec.client() as client:
        with pytest.raises(UnexpectedResponse, match="not JSON"):
            await client.get(PODS, "web", namespace="default")


async def test_retry_on_conflict_rereads_until_the_write_succeeds() -> None:
    clock = FakeClock()
    attempts = 0

    async def read_modify_write() -> str:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise Conflict(status_model(409, "Conflict"))
        return "written"

    task = retry_on_conflict(read_modify_write, clock=clock)
    assert await _run_with_clock(task, clock) == "written"
    assert attempts == 3


async def test_retry_on_conflict_gives_up_after_the_steps_and_raises_the_conflict() -> None:
    clock = FakeClock()
    attempts = 0

    async def always_conflicts() -> None:
        nonlocal attempts
        attempts += 1
        raise Conflict(status_model(409, "Conflict"))

    with pytest.raises(Conflict):
        await _run_with_clock(retry_on_conflict(always_conflicts, steps=4, clock=clock), clock)
    assert attempts == 4


async def test_retry_on_conflict_does_not_retry_other_errors() -> None:
    attempts = 0

    async def not_found() -> None:
        nonlocal attempts
        attempts += 1
        raise NotFound(status_model(404, "NotFound"))

    with pytest.raises(NotFound):
        await retry_on_conflict(not_found, clock=FakeClock())
    assert attempts == 1


def status_model(code: int, reason: str) -> V1Status:
    return V1Status(code=code, reason=reason, message=reason)


async def _run_with_clock(coro: Coroutine[Any, Any, T], clock: FakeClock) -> T:
    """Run ``coro``, advancing virtual time whenever it sleeps."""
    task = asyncio.ensure_future(coro)
    while not task.done():
        await asyncio.sleep(0)
        clock.advance(0.05)
    return task.result()
