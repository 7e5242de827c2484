"""Small builders and readers shared by the integration tests (plain dicts in wire form)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any, Self

import httpx


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


def rc(name: str, replicas: int = 1, labels: dict[str, str] | None = None) -> dict[str, Any]:
    labels = labels or {"app": name}
    return {
        "apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": labels,
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}},
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
        self._client = httpx.Client(base_url=base_url, timeout=httpx.Timeout(10, read=None))
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
