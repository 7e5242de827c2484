"""One whole kubesim cluster for the end-to-end tests.

``cluster`` overrides the session fixture of ``tests/conftest.py`` for this
directory: here it is etcd, the APIServer and every component (controller
manager, scheduler, three simulated kubelets, metrics-server), each its own process started
with the flags ``kubesim up`` gives it (each under its own identity: the
scheduler and controller-manager with their certificates and the
controller-manager's per-controller ServiceAccounts, each node with its
token). The root ``api`` fixture then works on it unchanged,
and ``namespace`` gives each test its own namespace (once its default
ServiceAccount exists), so no test can see another test's Pods.

metrics-server scrapes every 2 s and registers its APIService with the
APIServer's aggregation layer, as ``kubesim up`` has it do. Timings are shortened where
a test would otherwise wait on Kubernetes' defaults: nodes renew their Lease every second and are unreachable after 6 s
of silence, Pods tolerate an unreachable or not-ready node for 3 s (the
APIServer's default tolerations), HPAs are synced every 3 s (not 15 s), and
simulated containers start in about 0.3 s. Everything else runs with the
defaults users get.

The three nodes are shared: a test that changes them (labels, taints,
cordons) takes the ``nodes`` fixture, which puts every node back as it found
it when the test ends, failed or not. Tests run one at a time; none of this
is safe under xdist.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml

from kubesim import procs
from tests import harness
from tests.kube import NamespaceReader
from tests.kubectl import Kubectl, binary

NODES = ("node-1", "node-2", "node-3")
TOLERATION_SECONDS = "3"


def _node_profile(path: Path) -> Path:
    """The packaged default profile (3 nodes, zones a/b/c), with containers that start in about 0.3 s
    and memory pressure checked every second, clearing 15 s after it ends (longer than the 10 s
    between status reports, so that the condition is reported)."""
    profile = yaml.safe_load((resources.files("kubelet_sim") / "default-profile.yaml").read_text())
    profile["timings"].update(containerStartDelay="300ms", containerStartJitter="100ms",
                              evictionMonitoringPeriod="1s", evictionPressureTransitionPeriod="15s")
    path.write_text(yaml.safe_dump(profile))
    return path


def _start(c: harness.Cluster, module: str, name: str, *flags: str) -> None:
    health = procs.free_port()
    c.start_component(module, [*c.component_args(name), "--health-port", str(health), *flags], name=name,
                      ready_url=f"http://{procs.LOOPBACK}:{health}/readyz")


@pytest.fixture(scope="session")
def cluster() -> Iterator[harness.Cluster]:
    metrics_port = procs.free_port()
    with harness.cluster(apiserver_args=["--default-unreachable-toleration-seconds", TOLERATION_SECONDS,
                                         "--default-not-ready-toleration-seconds", TOLERATION_SECONDS],
                         service_accounts=True) as c:
        _start(c, "controller_manager", "controller-manager",
               "--node-monitor-period=1s", "--node-monitor-grace-period=6s",
               "--horizontal-pod-autoscaler-sync-period=3s")
        _start(c, "scheduler", "scheduler")
        _start(c, "kubelet_sim", "kubelet", "--node-profile", str(_node_profile(c.workdir / "nodes.yaml")),
               "--node-lease-renew-interval", "1s")
        _start(c, "metrics_server", "metrics-server", f"--port={metrics_port}", "--metric-resolution=2s",
               "--register-apiservice")
        with harness.admin_client(c.url, timeout=30) as api:
            _wait_nodes_usable(api)
        yield c


def _wait_nodes_usable(api: httpx.Client) -> None:
    def usable(name: str) -> bool:
        r = api.get(f"/api/v1/nodes/{name}")
        if r.status_code != 200:
            return False
        node = r.json()
        ready = [c["status"] for c in node["status"].get("conditions") or [] if c["type"] == "Ready"]
        return ready == ["True"] and not node["spec"].get("taints") and not node["spec"].get("unschedulable")
    harness.wait_for(lambda: all(usable(n) for n in NODES), timeout=30,
                     message="three Ready, untainted nodes")


@pytest.fixture(scope="session")
def admin(cluster: harness.Cluster, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    """kubectl 1.32 for cluster-scoped commands (nodes)."""
    return Kubectl(binary("1.32"), cluster.url, tmp_path_factory.mktemp("kubectl-admin"))


@pytest.fixture
def namespace(api: httpx.Client) -> Iterator[str]:
    """The test's own namespace, once its ``default`` ServiceAccount exists.

    Until the controller-manager has made it, ServiceAccount admission refuses
    every Pod there (403, ``error looking up service account``), as Kubernetes
    does; its own e2e framework waits for that account in each new namespace too.
    """
    name = f"t-{uuid.uuid4().hex[:10]}"
    r = api.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert r.status_code == 201, r.text
    harness.wait_for(lambda: api.get(f"/api/v1/namespaces/{name}/serviceaccounts/default").status_code == 200,
                     timeout=60, message=f"the default ServiceAccount of {name}")
    yield name
    api.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture
def kubectl(cluster: harness.Cluster, namespace: str, tmp_path: Path) -> Kubectl:
    """kubectl 1.32 in the test's namespace."""
    return Kubectl(binary("1.32"), cluster.url, tmp_path, namespace)


@pytest.fixture
def ns(api: httpx.Client, namespace: str) -> NamespaceReader:
    """The test's namespace, read through the HTTP API."""
    return NamespaceReader(api, namespace)


@pytest.fixture
def nodes(api: httpx.Client) -> Iterator[tuple[str, ...]]:
    """The node names; every label, taint and cordon the test changes is undone when it ends."""
    before = {name: api.get(f"/api/v1/nodes/{name}").json() for name in NODES}
    try:
        yield NODES
    finally:
        for name, node in before.items():
            now = api.get(f"/api/v1/nodes/{name}").json()
            labels: dict[str, Any] = {k: None for k in now["metadata"].get("labels") or {}}
            labels.update(node["metadata"].get("labels") or {})
            patch = {"metadata": {"labels": labels},
                     "spec": {"taints": node["spec"].get("taints"),
                              "unschedulable": node["spec"].get("unschedulable")}}
            r = api.patch(f"/api/v1/nodes/{name}", content=orjson.dumps(patch),
                          headers={"Content-Type": "application/merge-patch+json"})
            assert r.status_code == 200, r.text
        _wait_nodes_usable(api)
