"""The core kubectl commands with every kubectl from 1.27 to 1.33 on a whole cluster, and ``kubectl debug node``.

The core set is what a first hour with kubectl does: ``create deployment``,
``scale``, ``get``, ``apply`` (twice: ``unchanged``), ``run`` then ``logs``
once the simulated kubelet ran the Pod, and ``delete``. kubectl 1.32 and 1.33
send the typed objects as protobuf, the older ones as JSON (see
``tests/integration/test_kubectl_protobuf.py``); both must work the same.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests import harness
from tests.kube import NamespaceReader
from tests.kubectl import ALL_VERSIONS, Kubectl, binary

pytestmark = [pytest.mark.e2e, pytest.mark.kubectl]

CONFIG = """apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: {mode}
"""
LOG = "ready to serve\nserving"


@pytest.mark.parametrize("version", ALL_VERSIONS, ids=[f"kubectl-{v}" for v in ALL_VERSIONS])
def test_core_commands(version: str, cluster: harness.Cluster, api: httpx.Client, namespace: str,
                       ns: NamespaceReader, tmp_path: Path) -> None:
    k = Kubectl(binary(version), cluster.url, tmp_path, namespace)
    assert k("create", "deployment", "web", "--image=nginx:1.25", "--replicas=1").strip() == \
        "deployment.apps/web created"
    assert k("scale", "deployment", "web", "--replicas=3").strip() == "deployment.apps/web scaled"
    assert api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()["spec"]["replicas"] == 3
    assert k("get", "deployment", "web", "-o", "jsonpath={.spec.replicas}") == "3"
    assert k("get", "deployments", "-o", "name").split() == ["deployment.apps/web"]

    assert k("apply", "-f", "-", input=CONFIG.format(mode="fast")).strip() == "configmap/settings created"
    assert k("apply", "-f", "-", input=CONFIG.format(mode="fast")).strip() == "configmap/settings unchanged"
    assert k("apply", "-f", "-", input=CONFIG.format(mode="safe")).strip() == "configmap/settings configured"
    assert k("get", "configmap", "settings", "-o", "jsonpath={.data.mode}") == "safe"

    assert k("run", "talker", "--image=busybox", "--restart=Never",
             f"--annotations=kubesim.io/log={LOG}", "--annotations=kubesim.io/run-seconds=1").strip() == \
        "pod/talker created"
    ns.wait(lambda: ns.pod("talker")["status"].get("phase") == "Succeeded", "talker to succeed")
    logs = k("logs", "talker").splitlines()
    assert logs[1:3] == LOG.splitlines()

    assert k("delete", "deployment", "web").strip() == 'deployment.apps "web" deleted'
    assert k("delete", "configmap", "settings").strip() == 'configmap "settings" deleted'
    assert k("delete", "pod", "talker").strip() == 'pod "talker" deleted'
    assert k("get", "all", "-o", "name").split() == []


def test_created_deployment_runs_its_pods(kubectl: Kubectl, ns: NamespaceReader) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.25", "--replicas=2")
    assert len(ns.wait_running("app=web", 2)) == 2


def test_debug_node_creates_its_pod(kubectl: Kubectl, ns: NamespaceReader, nodes: tuple[str, ...]) -> None:
    node = nodes[0]
    out = kubectl.run("debug", f"node/{node}", "--image=busybox")
    printed = out.stdout + out.stderr
    assert f"Creating debugging pod node-debugger-{node}-" in printed
    [pod] = ns.pods()
    name = pod["metadata"]["name"]
    assert name.startswith(f"node-debugger-{node}-")
    spec = pod["spec"]
    assert spec["nodeName"] == node and spec["hostPID"] is True and spec["hostNetwork"] is True
    assert spec["volumes"][0]["hostPath"]["path"] == "/"
    assert {"name": "host-root", "mountPath": "/host"} in spec["containers"][0]["volumeMounts"]
    ns.wait(lambda: ns.pod(name)["status"].get("phase") in ("Running", "Succeeded"),
            "the debugging Pod to run on its node")
