"""Shared fixtures.

- ``cluster``: one etcd and one APIServer for the whole session (tests share it
  and isolate themselves with their own namespace);
- ``api``: a synchronous httpx client on that APIServer;
- ``namespace``: a fresh namespace per test;
- ``fresh_cluster``: a private etcd and APIServer for tests that stop, kill or
  compact things.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests import harness


@pytest.fixture(scope="session")
def cluster() -> Iterator[harness.Cluster]:
    with harness.cluster() as c:
        yield c


@pytest.fixture
def fresh_cluster() -> Iterator[harness.Cluster]:
    with harness.cluster() as c:
        yield c


@pytest.fixture
def api(cluster: harness.Cluster) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


@pytest.fixture
def namespace(api: httpx.Client) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:10]}"
    r = api.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert r.status_code == 201, r.text
    yield name
    api.delete(f"/api/v1/namespaces/{name}")
