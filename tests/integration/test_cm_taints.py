"""Taint-based eviction against a real APIServer: NoExecute taints set by hand, as ``kubectl taint`` sets them.

The node lifecycle controller is switched off here (``--controllers=*,-nodelifecycle``), so that only
the taints the tests write are on the nodes.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kubesim import procs
from tests import harness, kube
from tests.integration.test_cm_support import (
    active,
    bind,
    create_node,
    delete_nodes,
    events,
    get,
    list_pods,
    start_controller_manager,
    unique,
    wait_until,
)

pytestmark = pytest.mark.integration

MERGE = {"Content-Type": "application/merge-patch+json"}
TAINT = {"key": "dedicated", "value": "special", "effect": "NoExecute"}


@pytest.fixture(scope="module")
def controller_manager(cluster: harness.Cluster) -> Iterator[procs.ManagedProcess]:
    proc = start_controller_manager(cluster, "--controllers=*,-nodelifecycle", name="cm-taints")
    yield proc
    proc.stop()


@pytest.fixture
def node(api: httpx.Client) -> Iterator[str]:
    name = unique("taint-node")
    create_node(api, name)
    yield name
    delete_nodes(api, [name])


def toleration(seconds: int | None = None, operator: str = "Equal") -> dict[str, Any]:
    tol: dict[str, Any] = {"key": "dedicated", "operator": operator, "effect": "NoExecute"}
    if operator == "Equal":
        tol["value"] = "special"
    if seconds is not None:
        tol["tolerationSeconds"] = seconds
    return tol


def create_bound_pod(api: httpx.Client, namespace: str, name: str, node: str,
                     tolerations: list[dict[str, Any]] | None = None) -> None:
    body = kube.pod(name, node=node, tolerations=tolerations or [])
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=body)
    assert r.status_code == 201, r.text


def set_taints(api: httpx.Client, node: str, taints: list[dict[str, Any]]) -> float:
    r = api.patch(f"/api/v1/nodes/{node}", json={"spec": {"taints": taints or None}}, headers=MERGE)
    assert r.status_code == 200, r.text
    return time.monotonic()


def terminating(api: httpx.Client, namespace: str, name: str) -> dict[str, Any] | None:
    pod = get(api, f"/api/v1/namespaces/{namespace}/pods/{name}")
    return pod if pod is not None and pod["metadata"].get("deletionTimestamp") else None


def test_no_execute_taint_evicts_by_toleration(controller_manager, api, namespace, node):
    create_bound_pod(api, namespace, "intolerant", node)
    create_bound_pod(api, namespace, "five-seconds", node, [toleration(5)])
    create_bound_pod(api, namespace, "forever", node, [toleration(operator="Exists")])
    tainted = set_taints(api, node, [TAINT])

    evicted = wait_until(lambda: terminating(api, namespace, "intolerant"), message="the intolerant Pod evicted")
    assert time.monotonic() - tainted < 3, "a Pod that does not tolerate the taint goes at once"
    condition = next(c for c in evicted["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True", "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint")
    assert terminating(api, namespace, "five-seconds") is None

    wait_until(lambda: terminating(api, namespace, "five-seconds"), timeout=15,
               message="the Pod tolerating 5 s evicted")
    waited = time.monotonic() - tainted
    assert 4.9 <= waited < 8, f"evicted after {waited:.1f}s instead of 5s"
    assert terminating(api, namespace, "forever") is None, "a Pod tolerating forever stays"

    marked = wait_until(lambda: (e if len(e := events(api, namespace, "TaintManagerEviction")) == 2 else None),
                        message="two TaintManagerEviction events")
    assert {e["message"] for e in marked} == {f"Marking for deletion Pod {namespace}/intolerant",
                                              f"Marking for deletion Pod {namespace}/five-seconds"}
    assert {e["source"]["component"] for e in marked} == {"taint-eviction-controller"}


def test_removing_the_taint_in_time_cancels_the_eviction(controller_manager, api, namespace, node):
    create_bound_pod(api, namespace, "three-seconds", node, [toleration(3)])
    tainted = set_taints(api, node, [TAINT])
    time.sleep(1.0)
    set_taints(api, node, [])
    cancelled = wait_until(lambda: events(api, namespace, "TaintManagerEviction"), message="the cancellation")
    assert cancelled[0]["message"] == f"Cancelling deletion of Pod {namespace}/three-seconds"
    time.sleep(max(0.0, tainted + 4.5 - time.monotonic()))
    assert terminating(api, namespace, "three-seconds") is None


def test_a_later_taint_does_not_postpone_an_earlier_deadline(controller_manager, api, namespace, node):
    # Tolerates the first taint for 3 s, and a second taint for 60 s: the first deadline stands.
    other = {"key": "maintenance", "effect": "NoExecute"}
    tolerations = [toleration(3), {"key": "maintenance", "operator": "Exists", "effect": "NoExecute",
                                   "tolerationSeconds": 60}]
    create_bound_pod(api, namespace, "short", node, tolerations)
    tainted = set_taints(api, node, [TAINT])
    time.sleep(1.0)
    set_taints(api, node, [TAINT, other])
    wait_until(lambda: terminating(api, namespace, "short"), timeout=10, message="the eviction")
    assert time.monotonic() - tainted < 5


@pytest.mark.kubectl
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_taint_evicts_and_the_rc_replaces(controller_manager, api, namespace, node, cluster):
    r = api.post(f"/api/v1/namespaces/{namespace}/replicationcontrollers", json=kube.rc("web", 2))
    assert r.status_code == 201, r.text
    pods = wait_until(lambda: (p if len(p := list_pods(api, namespace)) == 2 else None), message="two replicas")
    for pod in pods:
        bind(api, namespace, pod["metadata"]["name"], node)
    result = subprocess.run(["kubectl", "--kubeconfig", str(cluster.kubeconfig()), "taint", "nodes", node, "key=value:NoExecute"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"node/{node} tainted"
    evicted = {p["metadata"]["name"] for p in pods}
    replaced = wait_until(lambda: (a if len(a := active(list_pods(api, namespace))) == 2
                                   and not evicted & {p["metadata"]["name"] for p in a} else None),
                          message="two replacements")
    assert all(not p["spec"].get("nodeName") for p in replaced)
    assert all(terminating(api, namespace, name) for name in evicted)
