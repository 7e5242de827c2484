"""Studies on whole clusters: compare, record and replay, the scheduler's configuration at run time, plugins.

Each test starts its own clusters (``kubesim.studies.clusters``, as
``kubesim compare`` does) and stops them by process id.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from kubelet_sim.adopt import ADOPT_ANNOTATION
from kubesim.studies import traceformat
from kubesim.studies.actions import client_actions, client_view, initial_objects
from kubesim.studies.clusters import ClusterSpec, StudyCluster, cluster
from kubesim.studies.objects import key_of
from tests import harness
from tests.kube import pod, rc

pytestmark = pytest.mark.e2e

PROFILES = Path(__file__).resolve().parents[2] / "kubesim" / "studies" / "profiles"


def kubesim(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubesim", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


# --- compare ---------------------------------------------------------------------------------------------


def test_least_allocated_spreads_most_allocated_packs_and_a_seed_repeats(tmp_path: Path) -> None:
    again = tmp_path / "least-allocated-again.yaml"
    shutil.copy(PROFILES / "least-allocated.yaml", again)
    out = tmp_path / "out"
    done = kubesim("compare", "builtin:spread-vs-pack", "--profile", str(PROFILES / "least-allocated.yaml"),
                   "--profile", str(PROFILES / "most-allocated.yaml"), "--profile", str(again),
                   "--seed", "7", "--parallel", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "compare.json").read_text())
    spread, packed, repeat = report["runs"]
    for run in report["runs"]:
        assert (run["scheduled"], run["pending"]) == (15, 0), run["name"]
        assert not run["replay"]["failed"]
    # LeastAllocated spreads the load, MostAllocated packs it: every spread figure moves the packing way.
    assert packed["allocation"]["cpu"]["gini"] > spread["allocation"]["cpu"]["gini"] + 0.2
    assert packed["allocation"]["cpu"]["stddev"] > spread["allocation"]["cpu"]["stddev"]
    assert packed["allocation"]["memory"]["gini"] > spread["allocation"]["memory"]["gini"]
    assert packed["nodesUsed"] < spread["nodesUsed"] == 6
    assert packed["allocation"]["cpu"]["mean"] == pytest.approx(spread["allocation"]["cpu"]["mean"])
    first, second = report["differences"]
    assert first["between"] == ["least-allocated", "most-allocated"] and first["count"] > 0
    assert "NodeResourcesFit" in first["decidedBy"]["most-allocated"]
    # The same trace, seed and profile: the same placements, Pod for Pod.
    assert second["count"] == 0
    assert sorted((p["namespace"], p["name"], p["node"]) for p in spread["placements"] if not p["owner"]) == \
        sorted((p["namespace"], p["name"], p["node"]) for p in repeat["placements"] if not p["owner"])
    assert "placements that differ between least-allocated and most-allocated" in done.stdout
    for name in ("timeline", "allocation", "latency"):
        assert (out / f"{name}.png").stat().st_size > 1000 and (out / f"{name}.svg").read_text().startswith("<?xml")


def test_a_profile_naming_an_unknown_plugin_is_rejected_before_any_replay(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
                   "- schedulerName: default-scheduler\n  plugins:\n    score: {enabled: [{name: Gravity}]}\n")
    started = time.monotonic()
    done = kubesim("compare", "builtin:spread-vs-pack", "--profile", str(PROFILES / "least-allocated.yaml"),
                   "--profile", str(bad), "--out", str(tmp_path / "out"))
    assert done.returncode == 1
    assert f"error: profile {bad}: plugin 'Gravity' does not exist" in done.stderr
    assert "starting a cluster" not in done.stderr and time.monotonic() - started < 60
    truncated = tmp_path / "cut.jsonl"
    truncated.write_text("".join((PROFILES.parent / "traces" / "spread-vs-pack.jsonl").read_text().splitlines(
        keepends=True)[:5]))
    done = kubesim("replay", str(truncated), "--server", "http://127.0.0.1:1")
    assert done.returncode == 1 and "line 6: no end line after record 4: the trace was cut short" in done.stderr


# --- record, replay, record ---------------------------------------------------------------------------------


def node_body(name: str, **spec: Any) -> dict[str, Any]:
    resources = {"cpu": "4", "memory": "8Gi", "pods": "20"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {ADOPT_ANNOTATION: "true"},
                         "labels": {"kubernetes.io/hostname": name, "pool": "study"}},
            "spec": spec, "status": {"capacity": resources, "allocatable": resources}}


class Recording:
    """``kubesim record`` as a user runs it, stopped with SIGTERM."""

    def __init__(self, c: StudyCluster, out: Path) -> None:
        self.out = out
        self.proc = subprocess.Popen([sys.executable, "-m", "kubesim", "record", "--out", str(out),
                                      "--kubeconfig", str(c.kubeconfig)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)

    def wait_started(self) -> None:
        harness.wait_for(lambda: self.out.exists() and self.out.stat().st_size > 0, timeout=120,
                         message="the recorder's header")

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, err
        return err


def running(api: httpx.Client, namespace: str, count: int) -> bool:
    items = [p for p in api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
             if not p["metadata"].get("deletionTimestamp")]
    return len(items) == count and all(p["status"].get("phase") == "Running" for p in items)


def comparable(trace: traceformat.Trace) -> tuple[list[Any], set[bytes]]:
    """The client actions, in order for each object (a replay may interleave different objects), and the start."""
    actions = sorted((a.comparable() for a in client_actions(trace.records)), key=lambda c: (c[1], c[2], c[3]))
    initial = {orjson.dumps(client_view(o), option=orjson.OPT_SORT_KEYS) for o in initial_objects(trace)}
    return actions, initial


def test_record_replay_record_gives_the_same_client_actions(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    with cluster(ClusterSpec(container_start="100ms")) as a, a.client(timeout=30) as api:
        recording = Recording(a, first)
        try:
            recording.wait_started()
            assert api.post("/api/v1/nodes", json=node_body("worker-1")).status_code == 201
            assert api.post("/api/v1/nodes", json=node_body("spare", taints=[
                {"key": "spare", "value": "yes", "effect": "NoSchedule"}])).status_code == 201
            assert api.post("/api/v1/namespaces", json={"metadata": {"name": "rec"}}).status_code == 201
            assert api.post("/api/v1/namespaces/rec/replicationcontrollers", json=rc("web", replicas=2)).status_code == 201
            harness.wait_for(lambda: running(api, "rec", 2), timeout=60, message="2 Pods Running")
            r = api.patch("/api/v1/namespaces/rec/replicationcontrollers/web", content=b'{"spec":{"replicas":3}}',
                          headers={"Content-Type": "application/merge-patch+json"})
            assert r.status_code == 200
            assert api.post("/api/v1/namespaces/rec/pods", json=pod("bare")).status_code == 201
            harness.wait_for(lambda: running(api, "rec", 4), timeout=60, message="4 Pods Running")
            assert api.delete("/api/v1/namespaces/rec/pods/bare").status_code == 200
            harness.wait_for(lambda: running(api, "rec", 3), timeout=60, message="the bare Pod gone")
            assert api.delete("/api/v1/nodes/spare").status_code == 200
            time.sleep(1)
        finally:
            recording.stop()
    recorded = traceformat.read(first)
    actions, initial = comparable(recorded)
    verbs = [(a.verb, a.kind, a.key[2]) for a in client_actions(recorded.records)]
    assert verbs == [("create", "Node", "worker-1"), ("create", "Node", "spare"), ("create", "Namespace", "rec"),
                     ("create", "ReplicationController", "web"), ("scale", "ReplicationController", "web"),
                     ("create", "Pod", "bare"), ("delete", "Pod", "bare"), ("delete", "Node", "spare")]
    with cluster(ClusterSpec(container_start="100ms")) as b, b.client(timeout=30) as api:
        recording = Recording(b, second)
        try:
            recording.wait_started()
            done = kubesim("replay", str(first), "--speed", "2", "--kubeconfig", str(b.kubeconfig))
            assert done.returncode == 0, done.stdout + done.stderr
            assert "sent 8 actions" in done.stdout
            harness.wait_for(lambda: running(api, "rec", 3), timeout=60, message="the replayed RC's 3 Pods")
            assert api.get("/api/v1/nodes/spare").status_code == 404
            time.sleep(1)
        finally:
            recording.stop()
    again_actions, again_initial = comparable(traceformat.read(second))
    assert again_actions == actions
    assert again_initial == initial



def deployment(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}}


def job(name: str, completions: int) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"completions": completions, "parallelism": completions,
                     "template": {"metadata": {"annotations": {"kubesim.io/run-seconds": "1"}},
                                  "spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}


def workloads_done(api: httpx.Client, web: int) -> bool:
    web_running = [p for p in api.get("/api/v1/namespaces/wl/pods", params={"labelSelector": "app=web"}).json()[
        "items"] if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]
    batch = api.get("/apis/batch/v1/namespaces/wl/jobs/batch")
    return len(web_running) == web and batch.status_code == 200 and batch.json()["status"].get("succeeded") == 2


def test_deployments_and_jobs_replay_as_client_actions_their_controllers_redo_the_rest(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    with cluster(ClusterSpec(own_nodes=2, container_start="100ms")) as a, a.client(timeout=30) as api:
        recording = Recording(a, first)
        try:
            recording.wait_started()
            assert api.post("/api/v1/namespaces", json={"metadata": {"name": "wl"}}).status_code == 201
            assert api.post("/apis/apps/v1/namespaces/wl/deployments", json=deployment("web", 2)).status_code == 201
            harness.wait_for(lambda: running(api, "wl", 2), timeout=60, message="the Deployment's 2 Pods Running")
            r = api.patch("/apis/apps/v1/namespaces/wl/deployments/web/scale", content=b'{"spec":{"replicas":3}}',
                          headers={"Content-Type": "application/merge-patch+json"})
            assert r.status_code == 200, r.text
            assert api.post("/apis/batch/v1/namespaces/wl/jobs", json=job("batch", 2)).status_code == 201
            harness.wait_for(lambda: workloads_done(api, 3), timeout=90, message="3 web Pods and the Job complete")
            time.sleep(1)
        finally:
            recording.stop()
    recorded = traceformat.read(first)
    verbs = [(a.verb, a.kind, a.key[2], a.replicas) for a in client_actions(recorded.records)]
    # The ReplicaSet, every Pod and the Job's status are the controllers' work: not actions.
    assert verbs == [("create", "Namespace", "wl", None), ("create", "Deployment.apps", "web", None),
                     ("scale", "Deployment.apps", "web", 3), ("create", "Job.batch", "batch", None)]
    assert any(r.object["kind"] == "ReplicaSet" for r in recorded.records)
    with cluster(ClusterSpec(container_start="100ms")) as b, b.client(timeout=30) as api:
        recording = Recording(b, second)
        try:
            recording.wait_started()
            done = kubesim("replay", str(first), "--speed", "4", "--kubeconfig", str(b.kubeconfig))
            assert done.returncode == 0, done.stdout + done.stderr
            harness.wait_for(lambda: workloads_done(api, 3), timeout=90,
                             message="the replayed Deployment's 3 Pods and the replayed Job complete")
            rs = api.get("/apis/apps/v1/namespaces/wl/replicasets").json()["items"]
            assert len(rs) == 1 and rs[0]["metadata"]["ownerReferences"][0]["name"] == "web"
            time.sleep(1)
        finally:
            recording.stop()
    # B's recording started before the replay loaded A's starting state: those creates come first.
    replayed = client_actions(traceformat.read(second).records)
    loaded = {key_of(o) for o in initial_objects(recorded)}
    assert {a.key for a in replayed if a.key in loaded} == {k for k in loaded if k[0] == "Node"}
    assert sorted(a.comparable() for a in replayed if a.key not in loaded) == sorted(
        a.comparable() for a in client_actions(recorded.records))

# --- the scheduler at run time, and the example plugins -------------------------------------------------------


BINPACKING = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled: [{name: BinPacking, weight: 20}]
"""


def log_has(c: StudyCluster, text: str) -> bool:
    return text in c.process("scheduler").log_path.read_text()


def wait_default_service_account(api: httpx.Client, namespace: str) -> None:
    """ServiceAccount admission refuses a Pod until the controller made the namespace's ``default``
    (the controllers get their own tokens first on a secure cluster, so that can take a moment)."""
    harness.wait_for(lambda: api.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/default").status_code == 200,
                     timeout=30, message=f"{namespace}/default ServiceAccount")


def node_of(api: httpx.Client, name: str) -> str:
    def bound() -> str | None:
        return api.get(f"/api/v1/namespaces/run/pods/{name}").json()["spec"].get("nodeName")
    return str(harness.wait_for(bound, timeout=30, message=f"{name} bound"))


def test_the_scheduler_takes_a_new_configuration_on_sighup_and_from_its_configmap(tmp_path: Path) -> None:
    config = tmp_path / "scheduler.yaml"
    shutil.copy(PROFILES / "least-allocated.yaml", config)
    spec = ClusterSpec(own_nodes=3, scheduler_config=config, seed=3, plugin_modules=("scheduler_plugins.binpacking",))
    with cluster(spec) as c, c.client(timeout=30) as api:
        assert api.post("/api/v1/namespaces", json={"metadata": {"name": "run"}}).status_code == 201
        wait_default_service_account(api, "run")
        small = {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "200m"}}}]}
        assert api.post("/api/v1/namespaces/run/pods", json={"metadata": {"name": "p0"}, "spec": small}).status_code == 201
        first = node_of(api, "p0")
        # SIGHUP: the file now packs Pods with the BinPacking example plugin.
        config.write_text(BINPACKING)
        c.process("scheduler").signal(signal.SIGHUP)
        harness.wait_for(lambda: log_has(c, f"configuration from file {config} applied: ")
                         and log_has(c, "score enabled BinPacking"), timeout=30, message="the SIGHUP reload logged")
        for i in (1, 2, 3):
            assert api.post("/api/v1/namespaces/run/pods", json={"metadata": {"name": f"p{i}"}, "spec": small}
                            ).status_code == 201
            assert node_of(api, f"p{i}") == first
        health = c.scheduler_url
        assert httpx.get(f"{health}/debug/config").json()["source"] == f"file {config}"
        # kubesim explain: why not another node?
        other = next(n["metadata"]["name"] for n in api.get("/api/v1/nodes").json()["items"]
                     if n["metadata"]["name"] != first)
        done = kubesim("explain", "run/p3", "--node", other, "--scheduler", health, "--kubeconfig", str(c.kubeconfig))
        assert done.returncode == 0, done.stderr
        assert f"node {other} was feasible and scored" in done.stdout and "BinPacking" in done.stdout
        # The ConfigMap overrides the file.
        done = kubesim("scheduler", "config", "set", str(PROFILES / "most-allocated.yaml"), "--kubeconfig", str(c.kubeconfig))
        assert done.returncode == 0, done.stderr
        harness.wait_for(lambda: httpx.get(f"{health}/debug/config").json()["source"].startswith(
            "ConfigMap kube-system/kubesim-scheduler-config"), timeout=30, message="the ConfigMap applied")
        assert log_has(c, "score disabled NodeResourcesBalancedAllocation, BinPacking")
        got = kubesim("scheduler", "config", "get", "--kubeconfig", str(c.kubeconfig))
        assert got.returncode == 0 and "MostAllocated" in got.stdout
        # A bad one is refused by `set`, and by the scheduler when written behind its back.
        bad = tmp_path / "bad.yaml"
        bad.write_text(BINPACKING.replace("BinPacking", "Gravity"))
        refused = kubesim("scheduler", "config", "set", str(bad), "--kubeconfig", str(c.kubeconfig))
        assert refused.returncode == 1 and "plugin 'Gravity' does not exist" in refused.stderr
        r = api.patch("/api/v1/namespaces/kube-system/configmaps/kubesim-scheduler-config",
                      content=orjson.dumps({"data": {"config.yaml": bad.read_text()}}),
                      headers={"Content-Type": "application/merge-patch+json"})
        assert r.status_code == 200
        harness.wait_for(lambda: httpx.get(f"{health}/debug/config").json()["rejected"] >= 1, timeout=30,
                         message="the bad ConfigMap rejected")
        assert httpx.get(f"{health}/debug/config").json()["source"].startswith("ConfigMap")
        # Reset: back to the file.
        assert kubesim("scheduler", "config", "reset", "--kubeconfig", str(c.kubeconfig)).returncode == 0
        harness.wait_for(lambda: httpx.get(f"{health}/debug/config").json()["source"] == f"file {config}",
                         timeout=30, message="back to the file")


def test_coscheduling_binds_a_gang_all_together_or_not_at_all(tmp_path: Path) -> None:
    from scheduler_plugins.coscheduling import POD_GROUP_LABEL, crd_manifest
    from scheduler_plugins.coscheduling.podgroup import rbac_manifest
    profile = tmp_path / "gang.yaml"
    profile.write_text("""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint: {enabled: [{name: Coscheduling}]}
    queueSort: {enabled: [{name: Coscheduling}], disabled: [{name: "*"}]}
  pluginConfig:
  - name: Coscheduling
    args: {permitWaitingTimeSeconds: 5}
""")
    with cluster(ClusterSpec(own_nodes=2)) as c, c.client(timeout=30) as api:
        r = api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd_manifest())
        assert r.status_code == 201, r.text
        role, binding = rbac_manifest()
        assert api.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", json=role).status_code == 201
        assert api.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", json=binding).status_code == 201
        deadline = time.monotonic() + 20
        while api.get("/apis/scheduling.x-k8s.io/v1alpha1").status_code != 200:
            if time.monotonic() > deadline:
                # An APIServer that stores CRDs without serving their resources (before CRD support landed).
                pytest.skip("this APIServer stores CustomResourceDefinitions but does not serve custom resources")
            time.sleep(0.1)
        # The scheduler of this cluster started before the CRD: restart it with the plugin.
        c.process("scheduler").stop()
        health = c.scheduler_health
        sched = c.process("scheduler")
        sched.argv += [f"--config={profile}", "--plugin-module=scheduler_plugins.coscheduling"]
        sched.start()
        sched.wait_ready(60)
        assert api.post("/api/v1/namespaces", json={"metadata": {"name": "gang"}}).status_code == 201
        wait_default_service_account(api, "gang")
        groups = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/gang/podgroups"
        for name, members in (("fits", 3), ("too-big", 3)):
            assert api.post(groups, json={"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                                          "metadata": {"name": name}, "spec": {"minMember": members}}).status_code == 201
        # Each node has 3800m: three 2-cpu members of "fits" fit (two nodes), three 3-cpu of "too-big" never all.
        for group, cpu in (("fits", "1"), ("too-big", "3")):
            for i in range(3):
                body = pod(f"{group}-{i}", labels={POD_GROUP_LABEL: group})
                body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
                assert api.post("/api/v1/namespaces/gang/pods", json=body).status_code == 201
        harness.wait_for(lambda: all(api.get(f"/api/v1/namespaces/gang/pods/fits-{i}").json()["spec"].get("nodeName")
                                     for i in range(3)), timeout=60, message="the gang that fits bound")
        time.sleep(8)  # longer than the permit timeout: the other gang had its chances
        big = [api.get(f"/api/v1/namespaces/gang/pods/too-big-{i}").json() for i in range(3)]
        assert not any(p["spec"].get("nodeName") for p in big)
        del health
