"""Several APIServers over one etcd answer as one, as kube-apiserver replicas behind a load balancer do.

Each replica has its own watch cache fed by its own etcd watch and shares nothing else, so
what must hold across them is what etcd gives: one resourceVersion sequence, conflicts
decided by etcd transactions, reads that see every write acknowledged by any replica, and
watches that resume on one replica where they stopped on another.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from kubesim import procs
from tests import harness

pytestmark = pytest.mark.integration

NS = "default"
CM = f"/api/v1/namespaces/{NS}/configmaps"
PODS = f"/api/v1/namespaces/{NS}/pods"


@pytest.fixture
def replicas(replicated_cluster: harness.Cluster) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    a, b = replicated_cluster.apiservers
    with harness.admin_client(a.url, timeout=30) as first, harness.admin_client(b.url, timeout=30) as second:
        yield first, second


def _configmap(name: str, **data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_a_write_on_one_replica_is_read_at_once_on_the_other(replicas: tuple[httpx.Client, httpx.Client]) -> None:
    a, b = replicas
    for i in range(20):
        created = a.post(CM, json=_configmap(f"ryw-{i}", n=str(i)))
        assert created.status_code == 201, created.text
        rv = created.json()["metadata"]["resourceVersion"]
        got = b.get(f"{CM}/ryw-{i}")
        assert got.status_code == 200 and got.json()["metadata"]["resourceVersion"] == rv
        # A consistent list (no resourceVersion) on the other replica includes it too: its cache
        # waits until it has caught up with etcd's current revision.
        listed = b.get(CM, params={"labelSelector": ""}).json()
        assert f"ryw-{i}" in {o["metadata"]["name"] for o in listed["items"]}
        assert int(listed["metadata"]["resourceVersion"]) >= int(rv)
        # And a list "at least as new as" the create's resourceVersion, from the cache.
        at_least = b.get(CM, params={"resourceVersion": rv, "resourceVersionMatch": "NotOlderThan"}).json()
        assert f"ryw-{i}" in {o["metadata"]["name"] for o in at_least["items"]}


def test_racing_updates_on_two_replicas_one_wins_the_other_gets_409(
        replicas: tuple[httpx.Client, httpx.Client]) -> None:
    a, b = replicas
    for i in range(10):
        obj = a.post(CM, json=_configmap(f"race-{i}", v="0")).json()
        results: dict[str, httpx.Response] = {}

        def update(name: str, client: httpx.Client, base: dict[str, object] = obj,
                   into: dict[str, httpx.Response] = results) -> None:
            into[name] = client.put(f"{CM}/{base['metadata']['name']}",  # type: ignore[index]
                                    json={**base, "data": {"v": name}})
        threads = [threading.Thread(target=update, args=("a", a)), threading.Thread(target=update, args=("b", b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        codes = sorted(r.status_code for r in results.values())
        assert codes == [200, 409], {k: r.text for k, r in results.items()}
        loser = next(r for r in results.values() if r.status_code == 409).json()
        assert loser["reason"] == "Conflict"
        assert loser["message"] == (f'Operation cannot be fulfilled on configmaps "race-{i}": the object has '
                                    "been modified; please apply your changes to the latest version and try again")
        winner = next(k for k, r in results.items() if r.status_code == 200)
        for client in (a, b):
            assert client.get(f"{CM}/race-{i}").json()["data"] == {"v": winner}


def test_racing_bindings_on_two_replicas_bind_each_pod_once(replicas: tuple[httpx.Client, httpx.Client]) -> None:
    a, b = replicas
    for node in ("node-a", "node-b"):
        assert a.post("/api/v1/nodes", json={"metadata": {"name": node}}).status_code == 201
    names = [f"bind-{i}" for i in range(30)]
    for name in names:
        r = a.post(PODS, json={"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
        assert r.status_code == 201, r.text
    outcome: dict[tuple[str, str], httpx.Response] = {}

    def bind(client: httpx.Client, node: str) -> None:
        for name in names:
            outcome[(name, node)] = client.post(f"{PODS}/{name}/binding", json={
                "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
    threads = [threading.Thread(target=bind, args=(a, "node-a")), threading.Thread(target=bind, args=(b, "node-b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in names:
        won = [node for node in ("node-a", "node-b") if outcome[(name, node)].status_code == 201]
        lost = [outcome[(name, node)] for node in ("node-a", "node-b") if outcome[(name, node)].status_code != 201]
        assert len(won) == 1 and len(lost) == 1, {n: outcome[(name, n)].text for n in ("node-a", "node-b")}
        assert lost[0].status_code == 409 and lost[0].json()["reason"] == "Conflict"
        for client in (a, b):
            assert client.get(f"{PODS}/{name}").json()["spec"]["nodeName"] == won[0]


def _watch(client: httpx.Client, rv: str, count: int) -> list[dict[str, object]]:
    """The first ``count`` events of a watch of ConfigMaps from ``rv``."""
    events: list[dict[str, object]] = []
    with client.stream("GET", CM, params={"watch": "true", "resourceVersion": rv, "timeoutSeconds": "30"}) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line:
                events.append(json.loads(line))
                if len(events) == count:
                    break
    return events


def test_a_watch_resumes_on_the_other_replica_where_it_stopped(
        replicas: tuple[httpx.Client, httpx.Client]) -> None:
    a, b = replicas
    start = a.get(CM).json()["metadata"]["resourceVersion"]
    for i in range(5):
        assert a.post(CM, json=_configmap(f"w-{i}")).status_code == 201
    first = _watch(a, start, 3)
    assert [e["object"]["metadata"]["name"] for e in first] == ["w-0", "w-1", "w-2"]  # type: ignore[index]
    resume = first[-1]["object"]["metadata"]["resourceVersion"]  # type: ignore[index]
    # Writes go on through the other replica meanwhile; none is lost or repeated on resuming.
    assert b.patch(f"{CM}/w-0", json={"data": {"x": "1"}},
                   headers={"Content-Type": "application/merge-patch+json"}).status_code == 200
    assert b.delete(f"{CM}/w-1").status_code == 200
    rest = _watch(b, str(resume), 4)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in rest] == [  # type: ignore[index]
        ("ADDED", "w-3"), ("ADDED", "w-4"), ("MODIFIED", "w-0"), ("DELETED", "w-1")]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in first + rest]  # type: ignore[index]
    assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs)


def test_a_watch_from_a_revision_the_replica_has_not_seen_yet_waits_for_it(
        replicas: tuple[httpx.Client, httpx.Client]) -> None:
    a, b = replicas
    created = a.post(CM, json=_configmap("ahead")).json()
    rv = created["metadata"]["resourceVersion"]
    after = b.post(CM, json=_configmap("after")).json()
    events = _watch(b, rv, 1)
    assert events[0]["type"] == "ADDED"
    assert events[0]["object"]["metadata"]["name"] == after["metadata"]["name"]  # type: ignore[index]


# --- python -m apiserver --workers N: one port, several processes ---------------------------------


def _socket_owners(matches: Callable[[list[str]], bool]) -> set[int]:
    """The pids holding a TCP socket whose /proc/net/tcp row ``matches`` (as ss would find them)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if matches(fields):
                    inodes.add(fields[9])
    pids: set[int] = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    pids.add(int(pid))
        except OSError:
            continue
    return pids


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1], 16)


def _listeners(port: int) -> set[int]:
    """The pids with a listening socket on ``port``."""
    return _socket_owners(lambda fields: fields[3] == "0A" and _port(fields[1]) == port)


def _served_by(port: int) -> set[int]:
    """The workers that answered 40 fresh connections: the pid holding the server's end of each, while it is open."""
    seen: set[int] = set()
    for _ in range(40):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                harness.admin_tls().wrap_socket(raw, server_hostname="127.0.0.1") as conn:
            conn.sendall(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert conn.recv(4096).startswith(b"HTTP/1.1 "), "the worker answered"  # ready or still starting
            mine = conn.getsockname()[1]
            seen |= _socket_owners(lambda fields, mine=mine: fields[3] == "01" and _port(fields[1]) == port
                                   and _port(fields[2]) == mine)
    return seen


def test_workers_share_one_port_and_stop_with_their_supervisor(monkeypatch: pytest.MonkeyPatch) -> None:
    with tempfile.TemporaryDirectory(prefix="kubesim-test-") as tmp:
        workdir = Path(tmp)
        # The supervisor's temporary files go here, to see that its SIGKILL leaves none behind.
        (workdir / "tmp").mkdir()
        monkeypatch.setenv("TMPDIR", str(workdir / "tmp"))
        etcd = harness.start_etcd(workdir)
        try:
            api = harness.start_apiserver(etcd.url, workdir, ["--workers", "2"], timeout=120, insecure_port=True)
            try:
                workers = harness.wait_for(lambda: p if len(p := _listeners(api.port)) == 2 else None,
                                           timeout=60, message="two workers listening")
                assert isinstance(workers, set) and api.process.pid not in workers
                # Both serve the --insecure-port too (SO_REUSEPORT on it as well).
                insecure = api.insecure_port
                assert insecure is not None
                harness.wait_for(lambda: _listeners(insecure) == workers, timeout=30,
                                 message="both workers on the insecure port")
                assert _served_by(api.port) == workers
                # A worker that dies is started again; the port keeps answering meanwhile (a connection the
                # kernel had already queued on the dead worker's socket is reset, as with any SO_REUSEPORT
                # server, so the client tries again).
                victim = min(workers)
                os.kill(victim, signal.SIGKILL)

                def ready() -> bool:
                    try:
                        with harness.admin_client(api.url, timeout=10) as client:
                            return client.get("/readyz").status_code == 200
                    except httpx.TransportError:
                        return False
                harness.wait_for(ready, timeout=10, message="the other worker to answer")
                again = harness.wait_for(lambda: p if len(p := _listeners(api.port)) == 2 and victim not in p
                                         else None, timeout=90, message="the worker started again")
                assert isinstance(again, set)
                # Killing the supervisor alone with SIGKILL takes its workers with it.
                assert api.process.pid is not None
                os.kill(api.process.pid, signal.SIGKILL)
                harness.wait_for(lambda: not _listeners(api.port), timeout=30, message="the workers to end")
                # Given every secret by its flags, it made no directory to leave behind.
                assert list((workdir / "tmp").iterdir()) == []
            finally:
                api.process.stop()
        finally:
            etcd.process.stop()


def test_workers_share_one_serving_certificate_and_signing_key_they_were_not_given() -> None:
    """Without --tls-cert-file or --service-account-signing-key-file, the supervisor makes one of each for
    all its workers: every connection shows the same certificate, and a token one worker signed is
    accepted by every other."""
    with tempfile.TemporaryDirectory(prefix="kubesim-test-") as tmp:
        workdir = Path(tmp)
        etcd = harness.start_etcd(workdir)
        port = procs.free_port()
        own = [a for a in harness.secure_apiserver_args(workdir)
               if not a.startswith(("--tls-", "--service-account-signing-key-file", "--service-account-key-file"))]
        # The admin's certificate, not checking the self-signed serving one (what is checked is that it is one).
        unverified = ssl.create_default_context()
        unverified.check_hostname, unverified.verify_mode = False, ssl.CERT_NONE
        unverified.load_cert_chain(*harness.admin_files()[1:])
        proc = procs.apiserver_process(etcd.url, port=port, log_path=workdir / "api.log",
                                       extra_args=[*own, "--workers", "2"], probe_tls=unverified)
        try:
            proc.start()
            proc.wait_ready(120)
            harness.wait_for(lambda: len(_listeners(port)) == 2, timeout=60, message="two workers listening")
            url = f"https://127.0.0.1:{port}"
            certificates = set()
            for _ in range(20):
                with socket.create_connection(("127.0.0.1", port)) as raw, \
                        unverified.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                    certificates.add(tls.getpeercert(binary_form=True))
            assert len(certificates) == 1
            with httpx.Client(base_url=url, verify=unverified, timeout=30) as admin:
                assert admin.post("/api/v1/namespaces/default/serviceaccounts",
                                  json={"metadata": {"name": "robot"}}).status_code == 201
                token = admin.post("/api/v1/namespaces/default/serviceaccounts/robot/token", json={
                    "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}).json()
            bearer = token["status"]["token"]
            no_certificate = ssl.create_default_context()
            no_certificate.check_hostname, no_certificate.verify_mode = False, ssl.CERT_NONE
            # 40 fresh connections: the kernel spreads them over both workers (all on one: 2**-39).
            for _ in range(40):
                with httpx.Client(base_url=url, verify=no_certificate, timeout=10,  # a new connection each time
                                  headers={"Authorization": f"Bearer {bearer}"}) as robot:
                    r = robot.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", json={
                        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
                    assert r.status_code == 201, r.text
                    assert r.json()["status"]["userInfo"]["username"] == "system:serviceaccount:default:robot"
        finally:
            proc.stop()
            etcd.process.stop()


def test_workers_refuse_a_port_in_use() -> None:
    port = procs.free_port()
    with socket.socket() as holder:
        holder.bind((procs.LOOPBACK, port))
        holder.listen()
        with tempfile.TemporaryDirectory(prefix="kubesim-test-") as tmp:
            proc = procs.apiserver_process("http://127.0.0.1:1", port=port, log_path=Path(tmp) / "api.log",
                                           extra_args=["--workers", "2"])
            proc.start()
            try:
                code = harness.wait_for(lambda: proc.proc.poll() if proc.proc else None, timeout=60,
                                        message="the supervisor to exit")
                assert code == 1
                assert f"cannot serve on 127.0.0.1:{port}" in (Path(tmp) / "api.log").read_text()
            finally:
                proc.stop()


def _etcd_key_version(etcd_url: str, key: str) -> int:
    etcdctl = str(Path(procs.find_etcd_binary()).with_name("etcdctl"))
    out = subprocess.run([etcdctl, f"--endpoints={etcd_url}", "get", key, "-w", "json"], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    kvs = json.loads(out).get("kvs") or []
    return int(kvs[0].get("version", 0)) if kvs else 0


def test_replicas_take_turns_compacting_etcd() -> None:
    started = time.monotonic()
    with harness.cluster(apiserver_args=["--etcd-compaction-interval", "1s"], apiservers=2) as c:
        logs = [api.process.log_path for api in c.apiservers]

        def compactions() -> int:
            return sum(p.read_text().count("compacted etcd history up to revision") for p in logs)
        harness.wait_for(lambda: compactions() >= 4, timeout=60, interval=0.5, message="a few compactions")
        # Each round has one winner, whose claim bumps compact_rev_key's version, and it alone compacts
        # (a replica's first win compacts nothing: it has no revision from a round before).
        version = _etcd_key_version(c.etcd.url, "compact_rev_key")
        done = compactions()
        assert version - 3 <= done <= version
        assert done <= (time.monotonic() - started) / 1.0 + 2, "both replicas compacted in the same rounds"
        revisions = [int(line.rsplit(" ", 1)[1]) for p in logs for line in p.read_text().splitlines()
                     if "compacted etcd history up to revision" in line]
        assert len(set(revisions)) == len(revisions)
