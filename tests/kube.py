"""Small builders and readers shared by the integration tests (plain dicts in wire form)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Self

import httpx

from tests import harness


def pod(name: str, *, labels: dict[str, str] | None = None, node: str | None = None,
        image: str = "nginx:1.25", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "image": image}], **spec},
    }
    if node:
        body["spec"]["nodeName"] = node
    return body


def rc(name: str, replicas: int = 1, labels: dict[str, str] | None = None,
       **template_spec: Any) -> dict[str, Any]:
    """An RC selecting ``labels`` (default ``app=<name>``); ``template_spec`` adds to its Pods' spec."""
    labels = labels or {"app": name}
    return {
        "apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": labels,
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}],
                                       **template_spec}}},
    }


def node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}}


class WatchReader:
    """Reads a watch stream in a background thread; ``next_event`` waits with a deadline."""

    def __init__(self, base_url: str, path: str, params: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self.status_code: int | None = None
        self.done = threading.Event()
        self._cond = threading.Condition()
        self._client = harness.admin_client(base_url, timeout=httpx.Timeout(10, read=None))
        self._stream = self._client.stream("GET", path, params=params, headers=headers)
        self._resp = self._stream.__enter__()
        self.status_code = self._resp.status_code
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for line in self._resp.iter_lines():
                if not line.strip():
                    continue
                with self._cond:
                    self.events.append(json.loads(line))
                    self._cond.notify_all()
        except (httpx.HTTPError, ValueError):
            pass
        finally:
            self.done.set()
            with self._cond:
                self._cond.notify_all()

    def wait_for(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.events) < count and not self.done.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            return list(self.events)

    def wait_until(self, predicate: Any, timeout: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self.events) and not self.done.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            return list(self.events)

    def close(self) -> None:
        # Closing a socket does not wake a thread blocked reading it: shut it down first, or the join waits
        # out its timeout on every watch the server has not ended.
        stream = self._resp.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        # Closing a stream the server already ended may raise; the reader is done either way.
        with contextlib.suppress(httpx.HTTPError, RuntimeError):
            self._stream.__exit__(None, None, None)
        self._client.close()
        self._thread.join(5)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def names(events: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    for ev in events:
        yield ev["type"], ev["object"].get("metadata", {}).get("name", "")


def is_ready(pod: dict[str, Any]) -> bool:
    """Running, with the Ready condition True."""
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or ())


def node_of(pod: dict[str, Any]) -> str:
    return str(pod["spec"].get("nodeName") or "")


class NamespaceReader:
    """Reads one namespace's Pods and Events through the HTTP API, and waits on them with deadlines."""

    def __init__(self, api: httpx.Client, name: str, timeout: float = 30.0) -> None:
        self.api = api
        self.name = name
        self.timeout = timeout

    def get(self, resource: str, name: str) -> dict[str, Any] | None:
        """One object (``resource`` is the plural, e.g. ``pods``), or None when it does not exist."""
        r = self.api.get(f"/api/v1/namespaces/{self.name}/{resource}/{name}")
        if r.status_code == 404:
            return None
        r.raise_for_status()
        return dict(r.json())

    def pod(self, name: str) -> dict[str, Any]:
        found = self.get("pods", name)
        assert found is not None, f"Pod {self.name}/{name} does not exist"
        return found

    def pods(self, selector: str | None = None, *, terminating: bool = False) -> list[dict[str, Any]]:
        """The Pods sorted by name; without ``terminating``, those being deleted are left out."""
        r = self.api.get(f"/api/v1/namespaces/{self.name}/pods",
                         params={"labelSelector": selector} if selector else {})
        r.raise_for_status()
        items = [p for p in r.json()["items"] if terminating or not p["metadata"].get("deletionTimestamp")]
        return sorted(items, key=lambda p: p["metadata"]["name"])

    def events(self, *, name: str | None = None, reason: str | None = None) -> list[dict[str, Any]]:
        pairs = (("involvedObject.name", name), ("reason", reason))
        fields = [f"{key}={value}" for key, value in pairs if value]
        r = self.api.get(f"/api/v1/namespaces/{self.name}/events",
                         params={"fieldSelector": ",".join(fields)} if fields else {})
        r.raise_for_status()
        return list(r.json()["items"])

    def wait_running(self, selector: str, count: int) -> list[dict[str, Any]]:
        """Waits until exactly ``count`` Pods match, all Running and Ready, and returns them."""
        def settled() -> list[dict[str, Any]] | None:
            pods = self.pods(selector)
            return pods if len(pods) == count and all(is_ready(p) for p in pods) else None
        pods: list[dict[str, Any]] = self.wait(settled, f"{count} Ready Pods with {selector}")
        return pods

    def wait_event(self, name: str, reason: str) -> dict[str, Any]:
        """The latest Event of this reason about the object, once there is one."""
        found = self.wait(lambda: self.events(name=name, reason=reason), f"a {reason} Event about {name}")
        return max(found, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))

    def wait_messages(self, name: str, reason: str | None = None, *,
                      until: Callable[[set[str]], bool]) -> list[dict[str, Any]]:
        """The Events about the object (of this reason), once ``until`` holds for their set of messages.

        Recorders send Events in batches after the change they report, so a test reads them by waiting."""
        def settled() -> list[dict[str, Any]] | None:
            found = self.events(name=name, reason=reason)
            return found if until({e["message"] for e in found}) else None
        events: list[dict[str, Any]] = self.wait(settled, f"the {reason or 'expected'} Events about {name}")
        return events

    def wait_unschedulable(self, name: str) -> str:
        """The scheduler's message for a Pod it could not place, as its condition and Event both say."""
        def condition() -> dict[str, Any] | None:
            conditions = self.pod(name)["status"].get("conditions") or ()
            return next((c for c in conditions if c["type"] == "PodScheduled" and c["status"] == "False"),
                        None)
        unschedulable: dict[str, Any] = self.wait(condition, f"Pod {name} to be unschedulable")
        assert unschedulable["reason"] == "Unschedulable"
        event = self.wait_event(name, "FailedScheduling")
        assert event["type"] == "Warning" and event["source"]["component"] == "default-scheduler"
        assert event["message"] == unschedulable["message"]
        pod = self.pod(name)
        assert not node_of(pod) and pod["status"]["phase"] == "Pending"
        return str(unschedulable["message"])

    def wait_reasons(self, name: str, *reasons: str) -> list[dict[str, Any]]:
        """The object's Events, oldest first, once every one of ``reasons`` is among them."""
        def found() -> list[dict[str, Any]] | None:
            events = sorted(self.events(name=name),
                            key=lambda e: str(e.get("eventTime") or e.get("firstTimestamp") or ""))
            return events if set(reasons) <= {e["reason"] for e in events} else None
        events: list[dict[str, Any]] = self.wait(found, f"Events {', '.join(reasons)} about {name}")
        return events

    def wait_gone(self, name: str) -> None:
        self.wait(lambda: self.get("pods", name) is None, f"Pod {name} to be deleted")

    def wait(self, predicate: Callable[[], Any], what: str) -> Any:
        """Polls ``predicate`` until it returns something truthy, and returns that."""
        return harness.wait_for(predicate, timeout=self.timeout, message=f"{what} in {self.name}")
