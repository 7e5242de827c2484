"""The runtimes read a Pod's objects as the Pod's node, which the Node authorizer allows, on a real APIServer.

kubelet_sim's own client is one node's (``kubelet.conf`` is the first
node's token), and ``system:node:node-1`` may read only the Secrets and
ConfigMaps of Pods bound to node-1. exec into a Pod of node-2 read its
ConfigMap volume with node-1's client: a 403, which closed the connection
with no Status, and kubectl printed nothing and exited 0. Here the runtimes
get node-1's client, the Pod is bound to node-2, and both the simulated
shell and the process runtime's preparation see the Pod's ConfigMap and
Secret.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubelet_sim.node import SimNode
from kubelet_sim.pods import SimPod
from kubelet_sim.profile import load_profile
from kubelet_sim.runtime import SimContainer
from kubelet_sim.runtimes.process import ProcessRuntime
from kubelet_sim.runtimes.simulated import SimulatedRuntime
from kubelet_sim.streaming.session import Session
from kubelet_sim.views import PodView
from machinery.api.kinds import object_key
from machinery.client import Client
from tests import harness

pytestmark = pytest.mark.integration


class Sink:
    def __init__(self) -> None:
        self.buffer = bytearray()

    async def write(self, data: bytes) -> None:
        self.buffer.extend(data)

    async def close(self) -> None:
        return


@pytest.fixture
async def process_client(cluster: harness.Cluster) -> AsyncIterator[Client]:
    """kubelet_sim's own client: the kubelet kubeconfig, that is node-1."""
    async with Client(cluster.config("kubelet")) as client:
        yield client


def _objects(api: httpx.Client, namespace: str, node: str) -> dict[str, Any]:
    """A ConfigMap, a Secret and a Pod bound to ``node`` that mounts the one and takes a variable from the other."""
    for kind, body in (("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
                                       "data": {"mode": "fast"}}),
                       ("secrets", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
                                    "stringData": {"password": "s3cret"}})):
        response = api.post(f"/api/v1/namespaces/{namespace}/{kind}", json=body)
        assert response.status_code == 201, response.text
    account = api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts", json={"metadata": {"name": "default"}})
    assert account.status_code == 201, account.text
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": {
        "nodeName": node, "serviceAccountName": "default",
        "containers": [{"name": "app", "image": "nginx", "command": ["sleep", "3600"],
                        "env": [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds",
                                                                                     "key": "password"}}}],
                        "volumeMounts": [{"name": "settings", "mountPath": "/etc/settings"},
                                         {"name": "access", "mountPath": "/var/run/secrets/kubernetes.io/"
                                                                         "serviceaccount"}]}],
        "volumes": [{"name": "settings", "configMap": {"name": "settings"}},
                    {"name": "access", "projected": {"sources": [
                        {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}}]}}
    response = api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def _sim_pod(wire: dict[str, Any], node_client: Client) -> tuple[SimPod, SimContainer]:
    """The Pod as the kubelet of node-2 holds it: its node acts with node-2's token."""
    planned = next(p for p in load_profile().plan(2) if p.name == "node-2")
    recorder: Any = None
    node = SimNode(planned, 1, recorder, {}, client=node_client)
    container = SimContainer("app", "nginx")
    meta = wire["metadata"]
    view = PodView.model_validate(wire)
    pod = SimPod(object_key(meta["namespace"], meta["name"]), meta["uid"], node, view, [], [container], {},
                 frozenset())
    return pod, container


async def test_the_simulated_shell_mounts_a_pod_of_another_node(api: httpx.Client, namespace: str,
                                                                 process_client: Client) -> None:
    wire = _objects(api, namespace, "node-2")
    # What node-1's identity may not do: the Node authorizer's refusal the runtime ran into.
    denied = harness.token_client(str(api.base_url), harness.node_token("node-1"), timeout=10)
    with denied:
        refused = denied.get(f"/api/v1/namespaces/{namespace}/configmaps/settings")
    assert refused.status_code == 403, refused.text
    pod, container = _sim_pod(wire, process_client.with_token(harness.node_token("node-2")))
    out, err = Sink(), Sink()
    session = Session(None, out, err, False)
    command = ["sh", "-c", "echo $PASSWORD; cat /etc/settings/mode"]
    code = await SimulatedRuntime(process_client).exec(pod, container, command, session)
    assert (code, out.buffer.decode(), err.buffer.decode()) == (0, "s3cret\nfast", "")


async def test_the_process_runtime_prepares_a_pod_of_another_node(api: httpx.Client, namespace: str,
                                                                   process_client: Client, tmp_path: Path) -> None:
    wire = _objects(api, namespace, "node-2")
    pod, container = _sim_pod(wire, process_client.with_token(harness.node_token("node-2")))
    runtime = ProcessRuntime(process_client, tmp_path / f"root-{uuid.uuid4().hex[:6]}")
    try:
        prepared = await runtime.prepare(pod, container)
        assert prepared.env["PASSWORD"] == "s3cret"
        assert (runtime.pod_dir(pod) / "volumes" / "settings" / "mode").read_text() == "fast"
        # The projected token: asked for as node-2 and bound to the Pod (NodeRestriction allows nothing else).
        token = (runtime.pod_dir(pod) / "volumes" / "access" / "token").read_text()
        with harness.token_client(str(api.base_url), token, timeout=10) as pod_identity:
            review = pod_identity.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", json={
                "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        user = review.json()["status"]["userInfo"]
        assert user["username"] == f"system:serviceaccount:{namespace}:default"
        assert user["extra"]["authentication.kubernetes.io/pod-name"] == ["web"]
    finally:
        runtime.forget(pod)
        await runtime.close()
