"""Shared fixtures.

- ``cluster``: one etcd and one APIServer for the whole session (tests share it
  and isolate themselves with their own namespace);
- ``api``: a synchronous httpx client on that APIServer, as the admin (system:masters);
- ``namespace``: a fresh namespace per test;
- ``fresh_cluster``: a private etcd and APIServer for tests that stop, kill or
  compact things;
- ``replicated_cluster``: a private etcd with two APIServers over it, for what
  must hold across kube-apiserver replicas; one per test module (its tests use
  names of their own and stop nothing).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import settings

from kubesim import procs
from tests import harness


@pytest.fixture(scope="session")
def cluster() -> Iterator[harness.Cluster]:
    with harness.cluster() as c:
        yield c


@pytest.fixture
def fresh_cluster() -> Iterator[harness.Cluster]:
    with harness.cluster() as c:
        yield c


@pytest.fixture(scope="module")
def replicated_cluster() -> Iterator[harness.Cluster]:
    with harness.cluster(apiservers=2) as c:
        yield c


@pytest.fixture
def api(cluster: harness.Cluster) -> Iterator[httpx.Client]:
    with cluster.client(timeout=30) as client:
        yield client


@pytest.fixture
def namespace(api: httpx.Client) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:10]}"
    r = api.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert r.status_code == 201, r.text
    yield name
    api.delete(f"/api/v1/namespaces/{name}")


# Property tests assert what holds for every input, not how fast one example runs: with four workers on
# two cores (make test), hypothesis' 200 ms deadline per example fails them at random.
settings.register_profile("kubesim", deadline=None)
settings.load_profile("kubesim")


def pytest_configure(config: pytest.Config) -> None:
    # Each pytest-xdist worker chooses its servers' ports from a slice of its own (its children inherit
    # it): a worker restarting an APIServer on its port leaves it free for seconds, and another worker's
    # free_port could otherwise hand it to a server of its own ("address already in use").
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if worker.startswith("gw") and worker[2:].isdigit() and count.isdigit():
        low, high = procs.worker_port_range(int(worker[2:]), int(count))
        os.environ[procs.PORT_RANGE_ENV] = f"{low}-{high}"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--chaos", action="store_true", default=False,
                     help="run the long fault and fuzzing campaign (tests marked chaos; make chaos)")
    parser.addoption("--slow", action="store_true", default=False,
                     help="also run the tests marked slow (a minute or more each; make test gives it)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skips = {"chaos": (config.getoption("--chaos"), "the long campaign runs with --chaos (make chaos)"),
             "slow": (config.getoption("--slow"), "a slow test: runs with --slow (make test gives it)")}
    for item in items:
        for marker, (wanted, reason) in skips.items():
            if marker in item.keywords and not wanted:
                item.add_marker(pytest.mark.skip(reason=reason))
    # The longest files first, the shortest last, so that with pytest-xdist (make test runs it with
    # --dist loadfile --no-loadscope-reorder, keeping this order) no long file starts when the others are
    # done: the slow tests, then the end-to-end files (each a minute or two), then the integration files,
    # then the unit tests. A stable sort keeps each file's own order.
    rank = {"e2e": 0, "integration": 1}
    items.sort(key=lambda item: ("slow" not in item.keywords,
                                 rank.get(item.path.parent.name, 2) if item.path.parent.parent.name == "tests"
                                 else 2))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Iterator[None]:
    """A failed test's report carries the last lines of each log of the cluster it used.

    The processes' working directories are deleted when their fixtures end, so without this a failure
    on CI (a timeout, a 500) leaves no trace of what the APIServer or a component was doing.
    """
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if not report.failed:
        return
    funcargs = getattr(item, "funcargs", {})
    used = funcargs.get("cluster") or funcargs.get("fresh_cluster") or funcargs.get("replicated_cluster")
    if not isinstance(used, harness.Cluster):
        return
    for log in sorted((used.workdir / "logs").glob("*.log")):
        if log.name.startswith("audit"):
            continue
        report.sections.append((f"last lines of {log.name}", procs.tail(log, 40)))
