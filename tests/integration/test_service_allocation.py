"""ClusterIPs and NodePorts against real etcd: shared by several APIServers, kept across restarts, released, exhausted.

The ranges are made small (a /26 and 64 ports) so that two APIServers
allocating without agreeing would collide at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from apiserver.registry.core.service.allocator import Bitmap, EtcdRange
from apiserver.registry.core.service.repair import PASSES_BEFORE_RELEASE, Repair
from apiserver.storage.etcd import EtcdStorage
from tests import harness

pytestmark = pytest.mark.integration

SMALL = ["--service-cluster-ip-range", "10.96.0.0/26", "--service-node-port-range", "30000-30063"]
SERVICES = "/api/v1/namespaces/default/services"


def service(name: str, kind: str = "ClusterIP", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"type": kind, "selector": {"app": name}, "ports": [{"port": 80}], **spec}}


@contextlib.contextmanager
def etcd_with(*servers: list[str]) -> Iterator[tuple[harness.Etcd, list[harness.ApiServer], Path]]:
    """etcd and one APIServer per argument list, all stopped on exit."""
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kubesim-alloc-")))
        etcd = harness.start_etcd(workdir)
        stack.callback(etcd.process.stop)
        apis = []
        for args in servers:
            api = harness.start_apiserver(etcd.url, workdir, args)
            stack.callback(api.process.stop)
            apis.append(api)
        yield etcd, apis, workdir


def ready(url: str) -> httpx.Client:
    client = harness.admin_client(url, timeout=30)
    try:
        harness.wait_for(lambda: client.get(f"{SERVICES}/kubernetes").status_code == 200, timeout=30,
                         message="the kubernetes Service")
    except BaseException:
        client.close()
        raise
    return client


def test_two_apiservers_never_hand_out_the_same_cluster_ip_or_node_port() -> None:
    with etcd_with(SMALL, SMALL) as (_etcd, apis, _):
        clients = [ready(api.url) for api in apis]

        def create(i: int) -> httpx.Response:
            return clients[i % 2].post(SERVICES, json=service(f"svc-{i}", "NodePort"))

        # 40 Services from two APIServers at once, out of 46 dynamic addresses and 62 dynamic ports.
        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(create, range(40)))
        assert [r.status_code for r in results] == [201] * 40, [r.text for r in results if r.status_code != 201]
        listed = clients[0].get(SERVICES).json()["items"]
        ips = [s["spec"]["clusterIP"] for s in listed]
        ports = [p["nodePort"] for s in listed for p in s["spec"]["ports"] if "nodePort" in p]
        assert len(ips) == len(set(ips)) == 41
        assert len(ports) == len(set(ports)) == 40
        assert all(30000 <= p <= 30063 for p in ports)
        for client in clients:
            client.close()


def test_a_restart_keeps_allocations_and_a_delete_releases_them() -> None:
    with etcd_with(SMALL) as (etcd, apis, workdir), contextlib.closing(ready(apis[0].url)) as client:
        first = client.post(SERVICES, json=service("first", "NodePort")).json()["spec"]
        apis[0].process.stop()
        # A new APIServer (on another port) against the same etcd.
        again = harness.start_apiserver(etcd.url, workdir, SMALL)
        try:
            with contextlib.closing(ready(again.url)) as client2:
                taken = client2.post(SERVICES, json=service("same-ip", clusterIP=first["clusterIP"]))
                assert taken.status_code == 422
                assert taken.json()["message"] == (
                    f'Service "same-ip" is invalid: spec.clusterIPs: Invalid value: ["{first["clusterIP"]}"]: '
                    f"failed to allocate IP {first['clusterIP']}: provided IP is already allocated")
                port = first["ports"][0]["nodePort"]
                taken = client2.post(SERVICES, json=service("same-port", "NodePort",
                                                            ports=[{"port": 80, "nodePort": port}]))
                assert taken.status_code == 422
                assert taken.json()["details"]["causes"] == [{
                    "reason": "FieldValueInvalid", "field": "spec.ports[0].nodePort",
                    "message": f"Invalid value: {port}: provided port is already allocated"}]
                # Deleting the Service gives both back.
                assert client2.delete(f"{SERVICES}/first").status_code == 200
                reused = client2.post(SERVICES, json=service("reuse", "NodePort", clusterIP=first["clusterIP"],
                                                             ports=[{"port": 80, "nodePort": port}]))
                assert reused.status_code == 201, reused.text
        finally:
            again.process.stop()


def test_exhausted_ranges_answer_as_kubernetes_does() -> None:
    tiny = ["--service-cluster-ip-range", "10.96.0.0/29", "--service-node-port-range", "30000-30001"]
    with etcd_with(tiny) as (_etcd, apis, _):
        client = ready(apis[0].url)
        # A /29 has 6 usable addresses; the kubernetes Service holds the first.
        for i in range(5):
            assert client.post(SERVICES, json=service(f"s{i}")).status_code == 201
        full = client.post(SERVICES, json=service("one-too-many"))
        assert full.status_code == 500
        assert full.json()["reason"] == "InternalError"
        assert full.json()["message"] == "Internal error occurred: failed to allocate a serviceIP: range is full"
        # A headless Service needs no address.
        assert client.post(SERVICES, json=service("headless", clusterIP="None")).status_code == 201
        out = client.post(SERVICES, json=service("outside", clusterIP="10.100.0.1"))
        assert out.status_code == 422
        assert "the provided IP (10.100.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/29" \
            in out.json()["message"]

        assert client.delete(f"{SERVICES}/s0").status_code == 200
        assert client.delete(f"{SERVICES}/s1").status_code == 200
        for name in ("np-a", "np-b"):
            assert client.post(SERVICES, json=service(name, "NodePort")).status_code == 201
        client.delete(f"{SERVICES}/s2")
        no_port = client.post(SERVICES, json=service("np-c", "NodePort"))
        assert no_port.status_code == 500
        assert no_port.json()["message"] == "Internal error occurred: failed to allocate a nodePort: range is full"
        # The failed create gave its ClusterIP back: it can still be had.
        assert client.post(SERVICES, json=service("fits")).status_code == 201
        client.close()


def test_a_refused_create_releases_what_it_reserved() -> None:
    tiny = ["--service-cluster-ip-range", "10.96.0.0/29"]
    with etcd_with(tiny) as (_etcd, apis, _):
        client = ready(apis[0].url)
        for i in range(4):
            assert client.post(SERVICES, json=service(f"s{i}")).status_code == 201
        # One address is left; a Service refused by validation after reserving it must give it back.
        bad = service("bad", ports=[{"port": 80}, {"port": 81}])
        for _ in range(3):
            assert client.post(SERVICES, json=bad).status_code == 422
        # A dry run reserves nothing either.
        assert client.post(SERVICES, params={"dryRun": "All"}, json=service("dry")).status_code == 201
        assert client.post(SERVICES, json=service("last")).status_code == 201
        client.close()


def test_updates_allocate_and_release_by_type() -> None:
    with etcd_with(SMALL) as (_etcd, apis, _):
        client = ready(apis[0].url)
        created = client.post(SERVICES, json=service("web", "NodePort")).json()
        ip, port = created["spec"]["clusterIP"], created["spec"]["ports"][0]["nodePort"]
        # A resubmitted manifest (no clusterIP, no nodePort) keeps both.
        replaced = client.put(f"{SERVICES}/web", json={**service("web", "NodePort"),
                                                         "metadata": {"name": "web"}})
        assert replaced.status_code == 200, replaced.text
        assert replaced.json()["spec"]["clusterIP"] == ip
        assert replaced.json()["spec"]["ports"][0]["nodePort"] == port
        # NodePort -> ClusterIP gives the NodePort back.
        patched = client.patch(f"{SERVICES}/web", json={"spec": {"type": "ClusterIP"}},
                               headers={"Content-Type": "application/merge-patch+json"})
        assert patched.status_code == 200, patched.text
        assert "nodePort" not in patched.json()["spec"]["ports"][0]
        assert "externalTrafficPolicy" not in patched.json()["spec"]
        assert client.post(SERVICES, json=service("port-again", "NodePort",
                                                  ports=[{"port": 80, "nodePort": port}])).status_code == 201
        # ClusterIP -> ExternalName gives the ClusterIP back.
        patched = client.patch(f"{SERVICES}/web", json={"spec": {"type": "ExternalName",
                                                                 "externalName": "db.example.com"}},
                               headers={"Content-Type": "application/merge-patch+json"})
        assert patched.status_code == 200, patched.text
        assert "clusterIP" not in patched.json()["spec"] and "ipFamilies" not in patched.json()["spec"]
        assert client.post(SERVICES, json=service("ip-again", clusterIP=ip)).status_code == 201
        # The ClusterIP is immutable, with Kubernetes' words.
        moved = client.patch(f"{SERVICES}/ip-again", json={"spec": {"clusterIP": "10.96.0.9"}},
                             headers={"Content-Type": "application/merge-patch+json"})
        assert moved.status_code == 422
        assert moved.json()["message"] == ('Service "ip-again" is invalid: spec.clusterIPs[0]: Invalid value: '
                                           '["10.96.0.9"]: may not change once set')
        client.close()


def test_a_deleted_service_takes_its_endpoints() -> None:
    with etcd_with([]) as (_etcd, apis, _):
        client = ready(apis[0].url)
        assert client.post(SERVICES, json=service("web")).status_code == 201
        endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
                     "subsets": [{"addresses": [{"ip": "10.244.0.5"}], "ports": [{"port": 80}]}]}
        assert client.post("/api/v1/namespaces/default/endpoints", json=endpoints).status_code == 201
        assert client.delete(f"{SERVICES}/web").status_code == 200
        assert client.get("/api/v1/namespaces/default/endpoints/web").status_code == 404
        client.close()


def test_the_kubernetes_service_points_at_the_apiserver() -> None:
    with etcd_with([]) as (_etcd, apis, _):
        client = ready(apis[0].url)
        svc = client.get(f"{SERVICES}/kubernetes").json()
        assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
        assert svc["spec"]["clusterIP"] == "10.96.0.1" and svc["spec"]["type"] == "ClusterIP"
        assert svc["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP",
                                         "targetPort": apis[0].port}]
        ep = client.get("/api/v1/namespaces/default/endpoints/kubernetes").json()
        assert ep["subsets"] == [{"addresses": [{"ip": "127.0.0.1"}],
                                  "ports": [{"name": "https", "port": apis[0].port, "protocol": "TCP"}]}]
        eps = client.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes").json()
        assert eps["metadata"]["labels"]["kubernetes.io/service-name"] == "kubernetes"
        assert eps["endpoints"][0]["addresses"] == ["127.0.0.1"] and eps["ports"][0]["port"] == apis[0].port
        # Selected by field as Kubernetes allows.
        listed = client.get(SERVICES, params={"fieldSelector": "spec.clusterIP=10.96.0.1"}).json()["items"]
        assert [s["metadata"]["name"] for s in listed] == ["kubernetes"]
        # Users' Endpoints may not point at loopback; only the APIServer's own are let through.
        loop = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "loop"},
                "subsets": [{"addresses": [{"ip": "127.0.0.1"}]}]}
        assert client.post("/api/v1/namespaces/default/endpoints", json=loop).status_code == 422
        client.close()


# --- the bitmap and its repair, on etcd directly ------------------------------------------------------

def test_repair_marks_what_services_hold_and_frees_leaks() -> None:
    async def scenario(url: str) -> None:
        storage = EtcdStorage([url])
        await storage.connect()
        try:
            async def nothing() -> list[int]:
                return []

            store = EtcdRange(storage, "/registry/ranges/test", "0-31", 32, 4, nothing)
            assert await store.allocate(5) and await store.allocate(6)
            repair = Repair(store, "test")
            # 6 is held, 9 is held but was never marked, 5 is marked and held by nothing.
            assert await repair.run_once([6, 9]) == (1, 0)
            for _ in range(PASSES_BEFORE_RELEASE - 2):
                assert await repair.run_once([6, 9]) == (0, 0)
            assert await store.has(5)
            assert await repair.run_once([6, 9]) == (0, 1)
            bitmap = await store.read()
            assert list(bitmap) == [6, 9]
            # A range written for another spec is rebuilt, not trusted.
            other = EtcdRange(storage, "/registry/ranges/test", "0-15", 16, 0, nothing)
            assert isinstance(await other.read(), Bitmap) and list(await other.read()) == []
        finally:
            await storage.close()

    with harness.etcd_alone("kubesim-repair-") as url:
        asyncio.run(scenario(url))


def test_an_apiserver_started_again_brings_the_kubernetes_service_up_to_date() -> None:
    with etcd_with([]) as (etcd, apis, workdir):
        ready(apis[0].url).close()
        apis[0].process.stop()
        # Another port: the Service's targetPort and its endpoints must follow. Its ClusterIP is allocated
        # already (to the Service itself), so a create would fail; the bootstrap must update.
        again = harness.start_apiserver(etcd.url, workdir)
        try:
            with contextlib.closing(ready(again.url)) as client:
                def points_here() -> bool:
                    svc = client.get(f"{SERVICES}/kubernetes").json()
                    ep = client.get("/api/v1/namespaces/default/endpoints/kubernetes").json()
                    return (svc["spec"]["ports"][0]["targetPort"] == again.port
                            and ep["subsets"][0]["ports"][0]["port"] == again.port)

                harness.wait_for(points_here, timeout=20, message="the kubernetes Service at the new port")
                assert client.get(f"{SERVICES}/kubernetes").json()["spec"]["clusterIP"] == "10.96.0.1"
        finally:
            again.process.stop()
