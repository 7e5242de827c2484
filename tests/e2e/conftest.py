"""One whole kubesim cluster for the end-to-end tests.

``cluster`` overrides the session fixture of ``tests/conftest.py`` for this
directory: here it is etcd, the APIServer and every component (controller
manager, scheduler, three simulated kubelets), each its own process started
with the flags ``kubesim up`` gives it. The root ``api`` and ``namespace``
fixtures then work on it unchanged, so each test still gets its own namespace
and cannot see another test's Pods.

Timings are shortened where a test would otherwise wait on Kubernetes'
defaults: nodes renew their Lease every second and are unreachable after 6 s
of silence, Pods tolerate an unreachable or not-ready node for 3 s (the
APIServer's default tolerations), and simulated containers start in about
0.3 s. Everything else runs with the defaults users get.

The three nodes are shared: a test that changes them (labels, taints,
cordons) takes the ``nodes`` fixture, which puts every node back as it found
it when the test ends, failed or not. Tests run one at a time; none of this
is safe under xdist.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml

from kubesim import procs
from kubesim.kubeconfig import write_kubeconfig
from tests import harness
from tests.kube import NamespaceReader
from tests.kubectl import Kubectl, binary

NODES = ("node-1", "node-2", "node-3")
TOLERATION_SECONDS = "3"


def _node_profile(path: Path) -> Path:
    """The packaged default profile (3 nodes, zones a/b/c), with containers that start in about 0.3 s."""
    profile = yaml.safe_load((resources.files("kubelet_sim") / "default-profile.yaml").read_text())
    profile["timings"].update(containerStartDelay="300ms", containerStartJitter="100ms")
    path.write_text(yaml.safe_dump(profile))
    return path


def _start(c: harness.Cluster, module: str, name: str, *flags: str) -> None:
    health = procs.free_port()
    c.start_component(module, ["--kubeconfig", str(c.workdir / "kubeconfig"), "--health-port", str(health),
                               *flags], name=name, ready_url=f"http://{procs.LOOPBACK}:{health}/readyz")


@pytest.fixture(scope="session")
def cluster() -> Iterator[harness.Cluster]:
    with harness.cluster(apiserver_args=["--default-unreachable-toleration-seconds", TOLERATION_SECONDS,
                                         "--default-not-ready-toleration-seconds", TOLERATION_SECONDS]) as c:
        write_kubeconfig(c.workdir / "kubeconfig", c.url)
        _start(c, "controller_manager", "controller-manager",
               "--node-monitor-period=1s", "--node-monitor-grace-period=6s")
        _start(c, "scheduler", "scheduler")
        _start(c, "kubelet_sim", "kubelet", "--node-profile", str(_node_profile(c.workdir / "nodes.yaml")),
               "--node-lease-renew-interval", "1s")
        with httpx.Client(base_url=c.url, timeout=30) as api:
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
