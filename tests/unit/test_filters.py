"""The handler chain's filters as ASGI middlewares: max in-flight, request timeout, long-running checks."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from apiserver.admission.chain import UserInfo
from apiserver.endpoints.request import USER_SCOPE_KEY
from apiserver.filters import longrunning
from apiserver.filters.maxinflight import MaxInFlight
from apiserver.filters.timeout import RequestTimeout


def scope(method: str = "GET", path: str = "/api/v1/pods", query: bytes = b"") -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "query_string": query, "headers": []}


class Recorder:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        return int(self.messages[0]["status"])

    @property
    def headers(self) -> dict[bytes, bytes]:
        return dict(self.messages[0]["headers"])

    @property
    def body(self) -> dict[str, Any]:
        parsed: dict[str, Any] = orjson.loads(b"".join(m.get("body", b"") for m in self.messages[1:]))
        return parsed


class Blocking:
    """An app whose requests wait until released, answering 200."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.entered = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.entered += 1
        await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


@pytest.mark.parametrize(("method", "path", "query", "expected"), [
    pytest.param("GET", "/api/v1/pods", b"watch=true", True, id="watch-param"),
    pytest.param("GET", "/api/v1/pods", b"watch=1", True, id="watch-1"),
    pytest.param("GET", "/api/v1/pods", b"watch=false", False, id="watch-false"),
    pytest.param("GET", "/api/v1/watch/namespaces/a/pods", b"", True, id="watch-path"),
    pytest.param("GET", "/apis/coordination.k8s.io/v1/watch/leases", b"", True, id="watch-path-group"),
    pytest.param("GET", "/api/v1/namespaces/a/pods/p/log", b"follow=true", True, id="log-follow"),
    pytest.param("GET", "/api/v1/namespaces/a/pods/p/log", b"", False, id="log"),
    pytest.param("POST", "/api/v1/namespaces/a/pods/p/exec", b"", True, id="exec"),
    pytest.param("GET", "/api/v1/namespaces/a/pods/p/proxy/x", b"", True, id="proxy-path"),
    pytest.param("GET", "/api/v1/namespaces/watch", b"", False, id="namespace-named-watch"),
    pytest.param("GET", "/healthz", b"watch=1", False, id="non-resource"),
])
def test_long_running(method: str, path: str, query: bytes, expected: bool) -> None:
    assert longrunning.is_long_running(scope(method, path, query)) is expected


async def test_max_in_flight_refuses_beyond_each_limit_with_429_and_retry_after() -> None:
    app = Blocking()
    chain = MaxInFlight(app, max_requests=2, max_mutating=1)
    held = [asyncio.create_task(chain(scope("GET"), _receive, Recorder())) for _ in range(2)]
    held.append(asyncio.create_task(chain(scope("POST"), _receive, Recorder())))
    while app.entered < 3:
        await asyncio.sleep(0)
    refused_read, refused_write = Recorder(), Recorder()
    await chain(scope("GET"), _receive, refused_read)
    await chain(scope("DELETE"), _receive, refused_write)
    for r in (refused_read, refused_write):
        assert r.status == 429 and r.headers[b"retry-after"] == b"1"
        assert r.body["reason"] == "TooManyRequests"
        assert r.body["message"] == "Too many requests, please try again later."
        assert r.body["details"] == {"retryAfterSeconds": 1}
    # Watches and probes are never counted nor refused.
    watch = asyncio.create_task(chain(scope("GET", query=b"watch=true"), _receive, Recorder()))
    probe = asyncio.create_task(chain(scope("GET", "/readyz"), _receive, Recorder()))
    while app.entered < 5:
        await asyncio.sleep(0)
    app.release.set()
    await asyncio.gather(*held, watch, probe)
    assert (chain.reads, chain.writes, chain.refused) == (0, 0, 2)
    ok = Recorder()
    await chain(scope("GET"), _receive, ok)
    assert ok.status == 200


async def test_max_in_flight_serves_system_masters_beyond_the_limit() -> None:
    """kube-apiserver's rule: a system:master always gets an answer; everyone else gets 429."""
    app = Blocking()
    chain = MaxInFlight(app, max_requests=1, max_mutating=1)
    held = asyncio.create_task(chain(scope("POST"), _receive, Recorder()))
    while app.entered < 1:
        await asyncio.sleep(0)
    master, node = scope("POST"), scope("POST")
    master[USER_SCOPE_KEY] = UserInfo("kubernetes-admin", ("system:masters", "system:authenticated"))
    node[USER_SCOPE_KEY] = UserInfo("system:node:node-1", ("system:nodes", "system:authenticated"))
    refused = Recorder()
    await chain(node, _receive, refused)
    assert refused.status == 429
    served = Recorder()
    admin = asyncio.create_task(chain(master, _receive, served))
    for _ in range(100):
        if app.entered == 2 or admin.done():
            break
        await asyncio.sleep(0)
    app.release.set()
    await asyncio.gather(held, admin)
    assert served.status == 200
    assert (chain.writes, chain.refused) == (0, 1)


async def test_request_timeout_answers_504_and_spares_long_running_requests() -> None:
    app = Blocking()
    chain = RequestTimeout(app, timeout=0.05)
    timed_out = Recorder()
    await chain(scope("GET"), _receive, timed_out)
    assert timed_out.status == 504
    assert timed_out.body["reason"] == "Timeout"
    assert timed_out.body["message"] == ("Timeout: request did not complete within requested timeout - context "
                                         "deadline exceeded")
    watch = asyncio.create_task(chain(scope("GET", query=b"watch=true"), _receive, Recorder()))
    await asyncio.sleep(0.1)
    assert not watch.done()
    app.release.set()
    await watch


async def test_request_timeout_takes_the_shorter_timeout_parameter_and_refuses_bad_ones() -> None:
    app = Blocking()
    chain = RequestTimeout(app, timeout=60)
    shorter = Recorder()
    await asyncio.wait_for(chain(scope("GET", query=b"timeout=50ms"), _receive, shorter), 5)
    assert shorter.status == 504
    bad = Recorder()
    await chain(scope("GET", query=b"timeout=soon"), _receive, bad)
    assert bad.status == 400 and bad.body["message"] == "invalid timeout specified in the request URL"
