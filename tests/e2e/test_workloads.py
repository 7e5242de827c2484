"""The workload controllers on the whole cluster, driven with kubectl as a user would.

Deployments (rollouts, history, undo, restart, pause, scale, the progress
deadline), the seeds' affinity and taint experiments with a Deployment,
Jobs and CronJobs run to completion by kubelet_sim's scripted containers,
a StatefulSet of 3 with claims provisioned by the default StorageClass, a
DaemonSet on a cluster where one node is tainted and another joins, Services'
Endpoints, ResourceQuota, PodDisruptionBudgets with ``kubectl drain``, the
HPA, and cascading deletion. Each test reads what kubectl printed and checks
the objects' state through the API.

``kubectl create deployment/job/cronjob`` have their own tests; the others
create the objects with ``kubectl apply``, as manifests are usually applied.
"""

from __future__ import annotations

import re
import time
from importlib import resources
from typing import Any

import httpx
import pytest
import yaml

from kubesim import procs
from tests import harness, kube
from tests.kube import NamespaceReader, node_of
from tests.kubectl import Kubectl

pytestmark = [pytest.mark.e2e, pytest.mark.kubectl]



def template(labels: dict[str, str], image: str = "nginx:1.25", annotations: dict[str, str] | None = None,
             **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": labels}
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "image": image}], **spec}}


def deployment(name: str, replicas: int = 3, *, strategy: dict[str, Any] | None = None,
               progress_deadline: int | None = None, **spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    body: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                                     "template": template(labels, **spec)}}
    if strategy:
        body["spec"]["strategy"] = strategy
    if progress_deadline is not None:
        body["spec"]["progressDeadlineSeconds"] = progress_deadline
    return body


def apis(api: httpx.Client, ns: str, path: str) -> dict[str, Any]:
    r = api.get(f"/apis/{path.split('/', 2)[0]}/{path.split('/', 2)[1]}/namespaces/{ns}/{path.split('/', 2)[2]}")
    r.raise_for_status()
    return dict(r.json())


def deploy(api: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    return apis(api, ns, f"apps/v1/deployments/{name}")


def replica_sets(api: httpx.Client, ns: str) -> list[dict[str, Any]]:
    """The namespace's ReplicaSets, oldest revision first (creation timestamps have a one-second
    resolution: two made in the same second would come in name order)."""
    items: list[dict[str, Any]] = apis(api, ns, "apps/v1/replicasets")["items"]

    def revision(rs: dict[str, Any]) -> tuple[int, str]:
        annotations = rs["metadata"].get("annotations") or {}
        return int(annotations.get("deployment.kubernetes.io/revision", "0")), rs["metadata"]["creationTimestamp"]
    return sorted(items, key=revision)


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == ctype), None)


def history(kubectl: Kubectl, name: str) -> list[str]:
    out = kubectl("rollout", "history", f"deployment/{name}")
    lines = out.splitlines()
    assert lines[0].strip() == f"deployment.apps/{name}"
    assert lines[1].split() == ["REVISION", "CHANGE-CAUSE"]
    return [line.split()[0] for line in lines[2:] if line.strip()]


# --- Deployments ---------------------------------------------------------------------------------------


def test_kubectl_create_deployment(kubectl: Kubectl, ns: NamespaceReader) -> None:
    assert kubectl("create", "deployment", "web", "--image=nginx:1.25", "--replicas=3").strip() == \
        "deployment.apps/web created"
    ns.wait_running("app=web", 3)


def test_a_rollout_set_image_history_undo_and_restart(kubectl: Kubectl, api: httpx.Client,
                                                      ns: NamespaceReader) -> None:
    assert kubectl.apply(deployment("web")).strip() == "deployment.apps/web created"
    out = kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    assert out.splitlines()[-1] == 'deployment "web" successfully rolled out'
    pods = ns.wait_running("app=web", 3)
    [first] = replica_sets(api, ns.name)
    pod_hash = first["metadata"]["labels"]["pod-template-hash"]
    assert first["metadata"]["name"] == f"web-{pod_hash}"
    assert all(p["metadata"]["labels"]["pod-template-hash"] == pod_hash for p in pods)
    assert first["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert first["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    d = deploy(api, ns.name, "web")
    assert d["status"]["updatedReplicas"] == d["status"]["availableReplicas"] == 3
    assert condition(d, "Available")["reason"] == "MinimumReplicasAvailable"  # type: ignore[index]
    assert condition(d, "Progressing")["reason"] == "NewReplicaSetAvailable"  # type: ignore[index]
    assert condition(d, "Progressing")["message"] == f'ReplicaSet "web-{pod_hash}" has successfully progressed.'  # type: ignore[index]

    assert kubectl("set", "image", "deployment/web", "c=nginx:1.26").strip() == "deployment.apps/web image updated"
    assert kubectl("rollout", "status", "deployment/web", "--timeout=60s").splitlines()[-1] == \
        'deployment "web" successfully rolled out'
    assert {p["spec"]["containers"][0]["image"] for p in ns.wait_running("app=web", 3)} == {"nginx:1.26"}
    assert history(kubectl, "web") == ["1", "2"]
    assert "nginx:1.26" in kubectl("rollout", "history", "deployment/web", "--revision=2")
    # rollout status is satisfied by the new ReplicaSet; the old one's scale-down to 0 follows. (Both may be
    # created in the same second, so they are told apart by their image, not their creationTimestamp.)
    def by_image() -> tuple[dict[str, Any], dict[str, Any]] | None:
        rs = {r["spec"]["template"]["spec"]["containers"][0]["image"]: r for r in replica_sets(api, ns.name)}
        return (rs["nginx:1.25"], rs["nginx:1.26"]) if rs["nginx:1.25"]["spec"]["replicas"] == 0 else None
    old, new = ns.wait(by_image, "the old ReplicaSet scaled to 0")
    assert old["spec"]["replicas"] == 0 and new["spec"]["replicas"] == 3
    # The rollout's Events, as kube-controller-manager words them.
    def scaled_down(messages: set[str]) -> bool:
        return any(re.fullmatch(rf"Scaled down replica set web-{pod_hash} from \d to \d", m) for m in messages)
    scaled = {e["message"] for e in ns.wait_messages("web", "ScalingReplicaSet", until=scaled_down)}
    assert f"Scaled up replica set web-{pod_hash} from 0 to 3" in scaled

    assert kubectl("rollout", "undo", "deployment/web").strip() == "deployment.apps/web rolled back"
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    assert {p["spec"]["containers"][0]["image"] for p in ns.wait_running("app=web", 3)} == {"nginx:1.25"}
    # Undo re-uses revision 1's ReplicaSet, which becomes revision 3.
    assert history(kubectl, "web") == ["2", "3"]
    assert len(replica_sets(api, ns.name)) == 2
    assert kubectl("rollout", "undo", "deployment/web", "--to-revision=2").strip() == \
        "deployment.apps/web rolled back"
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    assert {p["spec"]["containers"][0]["image"] for p in ns.wait_running("app=web", 3)} == {"nginx:1.26"}

    before = {p["metadata"]["uid"] for p in ns.pods("app=web")}
    assert kubectl("rollout", "restart", "deployment/web").strip() == "deployment.apps/web restarted"
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    after = ns.wait_running("app=web", 3)
    assert before.isdisjoint(p["metadata"]["uid"] for p in after)
    assert "kubectl.kubernetes.io/restartedAt" in deploy(api, ns.name, "web")["spec"]["template"]["metadata"][
        "annotations"]


def test_pause_resume_and_scale(kubectl: Kubectl, api: httpx.Client, ns: NamespaceReader) -> None:
    kubectl.apply(deployment("web", 2))
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    assert kubectl("rollout", "pause", "deployment/web").strip() == "deployment.apps/web paused"
    kubectl("set", "image", "deployment/web", "c=nginx:1.26")
    ns.wait(lambda: (c := condition(deploy(api, ns.name, "web"), "Progressing")) and c["reason"] == "DeploymentPaused",
            "the paused condition")
    time.sleep(1)
    assert len(replica_sets(api, ns.name)) == 1, "a paused Deployment does not roll"
    # Scaling works while paused.
    assert kubectl("scale", "deployment", "web", "--replicas=4").strip() == "deployment.apps/web scaled"
    assert {p["spec"]["containers"][0]["image"] for p in ns.wait_running("app=web", 4)} == {"nginx:1.25"}
    assert kubectl("rollout", "resume", "deployment/web").strip() == "deployment.apps/web resumed"
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    assert {p["spec"]["containers"][0]["image"] for p in ns.wait_running("app=web", 4)} == {"nginx:1.26"}
    assert condition(deploy(api, ns.name, "web"), "Progressing")["reason"] == "NewReplicaSetAvailable"  # type: ignore[index]


def test_surge_and_unavailability_bound_a_rolling_update(kubectl: Kubectl, api: httpx.Client,
                                                         ns: NamespaceReader) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    kubectl.apply(deployment("web", 4, strategy=strategy, annotations={"kubesim.io/ready-after-seconds": "1"}))
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    kubectl("set", "image", "deployment/web", "c=nginx:1.26")
    peak = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = ns.pods("app=web")
        ready = [p for p in pods if p["status"].get("phase") == "Running"
                 and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))]
        peak = max(peak, len(pods))
        assert len(ready) >= 3 or len(pods) < 4, "maxUnavailable 0: never fewer than 4 ready (one may be starting)"
        if all(p["spec"]["containers"][0]["image"] == "nginx:1.26" for p in pods) and len(ready) == 4:
            break
        time.sleep(0.2)
    assert peak <= 5, "maxSurge 1: at most 5 Pods at once"
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")


def test_recreate_removes_every_old_pod_before_the_new_ones(kubectl: Kubectl, api: httpx.Client,
                                                           ns: NamespaceReader) -> None:
    kubectl.apply(deployment("web", 2, strategy={"type": "Recreate"}))
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    old = {p["metadata"]["uid"] for p in ns.pods("app=web")}
    kubectl("set", "image", "deployment/web", "c=nginx:1.26")
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    new = ns.wait_running("app=web", 2)
    assert old.isdisjoint(p["metadata"]["uid"] for p in new)
    old_rs, new_rs = replica_sets(api, ns.name)
    # The new ReplicaSet was scaled up only once the old one had no Pods left.
    down = f"Scaled down replica set {old_rs['metadata']['name']} from 2 to 0"
    up = f"Scaled up replica set {new_rs['metadata']['name']} from 0 to 2"
    events = ns.wait_messages("web", "ScalingReplicaSet", until=lambda messages: {down, up} <= messages)
    messages = [m for _, m in sorted((e["firstTimestamp"], e["message"]) for e in events)]
    assert messages.index(down) < messages.index(up)


def test_an_unschedulable_deployment_exceeds_its_progress_deadline(kubectl: Kubectl, api: httpx.Client,
                                                                   ns: NamespaceReader) -> None:
    kubectl.apply(deployment("stuck", 2, progress_deadline=3, nodeSelector={"no-such": "label"}))
    done = kubectl.run("rollout", "status", "deployment/stuck", "--timeout=60s", check=False)
    assert done.returncode == 1
    assert 'error: deployment "stuck" exceeded its progress deadline' in done.stderr
    progressing = condition(deploy(api, ns.name, "stuck"), "Progressing")
    assert progressing is not None and progressing["status"] == "False"
    assert progressing["reason"] == "ProgressDeadlineExceeded"
    assert re.fullmatch(r'ReplicaSet "stuck-\w+" has timed out progressing\.', progressing["message"])
    assert condition(deploy(api, ns.name, "stuck"), "Available")["status"] == "False"  # type: ignore[index]


def test_deleting_a_deployment_cascades_and_orphan_keeps_replica_sets(kubectl: Kubectl, api: httpx.Client,
                                                                      ns: NamespaceReader) -> None:
    kubectl.apply(deployment("web", 2), deployment("kept", 1))
    ns.wait_running("app=web", 2)
    ns.wait_running("app=kept", 1)
    all_out = kubectl("get", "all")
    for name in ("deployment.apps/web", "deployment.apps/kept", "replicaset.apps/web-", "pod/web-"):
        assert name in all_out
    assert kubectl("delete", "deployment", "web").strip() == 'deployment.apps "web" deleted'
    ns.wait(lambda: not ns.pods("app=web") and not [r for r in replica_sets(api, ns.name)
                                                    if r["metadata"]["name"].startswith("web-")],
            "the ReplicaSet and Pods collected")
    kubectl("delete", "deployment", "kept", "--cascade=orphan")
    time.sleep(2)
    [rs] = replica_sets(api, ns.name)
    assert rs["metadata"]["name"].startswith("kept-") and not rs["metadata"].get("ownerReferences")
    assert len(ns.pods("app=kept")) == 1


def test_foreground_deletion_waits_for_the_replica_sets_and_pods(kubectl: Kubectl, api: httpx.Client,
                                                                ns: NamespaceReader) -> None:
    kubectl.apply(deployment("web", 2, annotations={"kubesim.io/shutdown-seconds": "2"}))
    ns.wait_running("app=web", 2)
    kubectl("delete", "deployment", "web", "--cascade=foreground", "--wait=false")
    d = deploy(api, ns.name, "web")
    assert d["metadata"]["deletionTimestamp"] and "foregroundDeletion" in d["metadata"]["finalizers"]
    ns.wait(lambda: api.get(f"/apis/apps/v1/namespaces/{ns.name}/deployments/web").status_code == 404,
            "the Deployment gone")
    assert not ns.pods("app=web", terminating=True), "its Pods went before it"
    assert not replica_sets(api, ns.name)


def test_deleting_a_namespace_empties_every_kind(kubectl: Kubectl, admin: Kubectl, api: httpx.Client,
                                                 ns: NamespaceReader) -> None:
    other = f"{ns.name}-gone"
    admin("create", "namespace", other)
    target = Kubectl(kubectl.path, kubectl.server, kubectl.home, other)
    ns.wait(lambda: api.get(f"/api/v1/namespaces/{other}/serviceaccounts/default").status_code == 200,
            "the default ServiceAccount")
    target.apply(deployment("web", 1), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}},
                 {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cron"},
                  "spec": {"schedule": "@yearly", "jobTemplate": {"spec": job("x")["spec"]}}})
    assert admin("delete", "namespace", other, "--timeout=90s").strip() == f'namespace "{other}" deleted'
    assert api.get(f"/api/v1/namespaces/{other}").status_code == 404


# --- the seeds' experiments, with a Deployment ----------------------------------------------------------


def test_hard_node_affinity_with_a_deployment(kubectl: Kubectl, admin: Kubectl, ns: NamespaceReader,
                                              nodes: tuple[str, ...]) -> None:
    admin("label", "nodes", "node-2", "disktype=ssd")
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disktype", "operator": "In", "values": ["ssd"]}]}]}}}
    kubectl.apply(deployment("myapp01", 3, affinity=affinity))
    assert {node_of(p) for p in ns.wait_running("app=myapp01", 3)} == {"node-2"}


def test_every_node_tainted_keeps_a_deployment_pending_until_it_tolerates(
        kubectl: Kubectl, admin: Kubectl, api: httpx.Client, ns: NamespaceReader, nodes: tuple[str, ...]) -> None:
    admin("taint", "nodes", "--all", "key=value:NoSchedule")
    kubectl.apply(deployment("myapp01", 2))
    pending = ns.wait(lambda: len(ns.pods("app=myapp01")) == 2 and ns.pods("app=myapp01"), "2 Pods")
    for p in pending:
        assert "untolerated taint {key: value}" in ns.wait_unschedulable(p["metadata"]["name"])
    # Unlike an RC, a Deployment rolls its Pods when the template changes.
    kubectl.apply(deployment("myapp01", 2, tolerations=[{"key": "key", "operator": "Equal", "value": "value",
                                                         "effect": "NoSchedule"}]))
    running = ns.wait_running("app=myapp01", 2)
    assert {p["metadata"]["uid"] for p in running}.isdisjoint(p["metadata"]["uid"] for p in pending)


def test_a_deployment_spreads_over_zones_by_default(kubectl: Kubectl, ns: NamespaceReader) -> None:
    kubectl.apply(deployment("spread", 3))
    assert sorted(node_of(p) for p in ns.wait_running("app=spread", 3)) == ["node-1", "node-2", "node-3"]


# --- Jobs and CronJobs ---------------------------------------------------------------------------------


def job(name: str, **spec: Any) -> dict[str, Any]:
    annotations = spec.pop("annotations", {"kubesim.io/run-seconds": "0.5"})
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {**spec, "template": {"metadata": {"annotations": annotations},
                                          "spec": {"restartPolicy": "Never",
                                                   "containers": [{"name": "main", "image": "busybox"}]}}}}


def test_kubectl_create_job(kubectl: Kubectl) -> None:
    assert kubectl("create", "job", "pi", "--image=perl").strip() == "job.batch/pi created"


def test_a_job_completes_with_parallelism(kubectl: Kubectl, api: httpx.Client, ns: NamespaceReader) -> None:
    kubectl.apply(job("pi", completions=3, parallelism=2))
    assert kubectl("wait", "--for=condition=complete", "job/pi", "--timeout=60s").strip() == \
        "job.batch/pi condition met"
    status = apis(api, ns.name, "batch/v1/jobs/pi")["status"]
    assert status["succeeded"] == 3 and not status.get("failed") and status["completionTime"]
    assert [c["type"] for c in status["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert condition({"status": status}, "Complete")["reason"] == "CompletionsReached"  # type: ignore[index]
    pods = ns.pods("batch.kubernetes.io/job-name=pi")
    assert len(pods) == 3 and all(p["status"]["phase"] == "Succeeded" for p in pods)
    assert all("batch.kubernetes.io/job-tracking" not in (p["metadata"].get("finalizers") or ()) for p in pods)
    completed = ns.wait_messages("pi", "Completed", until=bool)
    assert {e["message"] for e in completed} == {"Job completed"}


def test_a_failing_job_stops_at_its_backoff_limit(kubectl: Kubectl, api: httpx.Client, ns: NamespaceReader) -> None:
    kubectl.apply(job("fails", backoffLimit=1,
                      annotations={"kubesim.io/run-seconds": "0.2", "kubesim.io/exit-code": "3"}))
    assert kubectl("wait", "--for=condition=failed", "job/fails", "--timeout=60s").strip() == \
        "job.batch/fails condition met"
    status = apis(api, ns.name, "batch/v1/jobs/fails")["status"]
    failed = condition({"status": status}, "Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    assert failed["message"] == "Job has reached the specified backoff limit"
    assert status["failed"] == 2 and not status.get("active")
    pods = ns.pods("batch.kubernetes.io/job-name=fails")
    # The replacement waited for the 10 s back-off after the first failure.
    starts = sorted(p["metadata"]["creationTimestamp"] for p in pods)
    assert len(starts) == 2


def test_an_indexed_job_gives_each_pod_its_index(kubectl: Kubectl, api: httpx.Client, ns: NamespaceReader) -> None:
    kubectl.apply(job("idx", completions=3, parallelism=3, completionMode="Indexed"))
    kubectl("wait", "--for=condition=complete", "job/idx", "--timeout=60s")
    status = apis(api, ns.name, "batch/v1/jobs/idx")["status"]
    assert status["completedIndexes"] == "0-2"
    pods = ns.pods("batch.kubernetes.io/job-name=idx")
    indexes = sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods)
    assert indexes == ["0", "1", "2"]
    for p in pods:
        index = p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
        assert p["spec"]["hostname"] == f"idx-{index}"
        assert p["metadata"]["name"].startswith(f"idx-{index}-")
        [env] = [e for e in p["spec"]["containers"][0]["env"] if e["name"] == "JOB_COMPLETION_INDEX"]
        assert env["valueFrom"]["fieldRef"]["fieldPath"] == \
            "metadata.annotations['batch.kubernetes.io/job-completion-index']"


def test_a_pod_failure_policy_fails_the_job_on_an_exit_code(kubectl: Kubectl, api: httpx.Client,
                                                           ns: NamespaceReader) -> None:
    body = job("policy", backoffLimit=6, annotations={"kubesim.io/run-seconds": "0.2", "kubesim.io/exit-code": "42"},
               podFailurePolicy={"rules": [{"action": "FailJob", "onExitCodes": {
                   "containerName": "main", "operator": "In", "values": [42]}}]})
    kubectl.apply(body)
    kubectl("wait", "--for=condition=failed", "job/policy", "--timeout=60s")
    failed = condition(apis(api, ns.name, "batch/v1/jobs/policy"), "Failed")
    assert failed is not None and failed["reason"] == "PodFailurePolicy"
    assert re.fullmatch(rf"Container main for pod {ns.name}/policy-\w+ failed with exit code 42 matching FailJob "
                        r"rule at index 0", failed["message"])


def test_finished_jobs_go_after_their_ttl(kubectl: Kubectl, api: httpx.Client, ns: NamespaceReader) -> None:
    kubectl.apply(job("short", ttlSecondsAfterFinished=1))
    kubectl("wait", "--for=condition=complete", "job/short", "--timeout=60s")
    ns.wait(lambda: api.get(f"/apis/batch/v1/namespaces/{ns.name}/jobs/short").status_code == 404,
            "the Job deleted after its TTL")
    ns.wait(lambda: not ns.pods("batch.kubernetes.io/job-name=short", terminating=True), "its Pods gone")


def test_kubectl_create_cronjob_and_a_job_from_it(kubectl: Kubectl) -> None:
    assert kubectl("create", "cronjob", "hello", "--image=busybox", "--schedule=* * * * *").strip() == \
        "cronjob.batch/hello created"
    assert kubectl("create", "job", "manual", "--from=cronjob/hello").strip() == "job.batch/manual created"


def test_a_cronjob_starts_its_missed_run_at_once_on_the_minute(kubectl: Kubectl, api: httpx.Client,
                                                               ns: NamespaceReader) -> None:
    # Waiting for the next minute would hold this worker for 30 s on average. A CronJob whose last run was
    # two minutes ago has missed the most recent minute, and the controller starts that run at once, as
    # Kubernetes' does (the schedule arithmetic of the live minute is unit-tested).
    kubectl.apply({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "hello"},
                   "spec": {"schedule": "* * * * *", "successfulJobsHistoryLimit": 1, "suspend": True,
                            "jobTemplate": {"spec": job("unused")["spec"]}}})
    path = f"/apis/batch/v1/namespaces/{ns.name}/cronjobs/hello"
    merge = {"Content-Type": "application/merge-patch+json"}
    two_minutes_ago = time.strftime("%Y-%m-%dT%H:%M:00Z", time.gmtime(time.time() - 120))
    r = api.patch(f"{path}/status", json={"status": {"lastScheduleTime": two_minutes_ago}}, headers=merge)
    assert r.status_code == 200, r.text
    assert api.patch(path, json={"spec": {"suspend": False}}, headers=merge).status_code == 200
    cronjob: dict[str, Any] = harness.wait_for(
        lambda: (c := api.get(path).json()).get("status", {}).get("lastSuccessfulTime") and c,
        timeout=60, interval=0.5, message="a successful run")
    scheduled = cronjob["status"]["lastScheduleTime"]
    assert scheduled.endswith(":00Z") and scheduled > two_minutes_ago, "runs fall on the minute, after the last"
    jobs = apis(api, ns.name, "batch/v1/jobs")["items"]
    [run] = [j for j in jobs if j["metadata"]["ownerReferences"][0]["name"] == "hello"]
    assert re.fullmatch(r"hello-\d+", run["metadata"]["name"])
    assert run["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == scheduled
    created = f"Created job {run['metadata']['name']}"
    saw = f"Saw completed job: {run['metadata']['name']}, condition: Complete"
    ns.wait_messages("hello", until=lambda messages: {created, saw} <= messages)


# --- StatefulSets and DaemonSets -------------------------------------------------------------------------


def test_a_statefulset_of_three_with_claims(kubectl: Kubectl, api: httpx.Client, ns: NamespaceReader) -> None:
    labels = {"app": "db"}
    # A class that binds late, so that each volume is provisioned on the node its Pod was given.
    late = f"late-{ns.name}"
    kubectl.apply({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": late},
                   "provisioner": "kubesim.io/hostpath", "volumeBindingMode": "WaitForFirstConsumer"})
    kubectl.apply({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
                   "spec": {"serviceName": "db", "replicas": 3, "selector": {"matchLabels": labels},
                            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                            "template": template(labels, image="postgres:16"),
                            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                                "storageClassName": late, "accessModes": ["ReadWriteOnce"],
                                "resources": {"requests": {"storage": "1Gi"}}}}]}})
    out = kubectl("rollout", "status", "statefulset/db", "--timeout=90s")
    assert "partitioned roll out complete: 3 new pods have been updated..." in out or \
        "statefulset rolling update complete 3 pods at revision" in out
    pods = ns.wait_running("app=db", 3)
    assert [p["metadata"]["name"] for p in pods] == ["db-0", "db-1", "db-2"]
    for p in pods:
        assert p["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == p["metadata"]["name"]
        assert p["spec"]["hostname"] == p["metadata"]["name"] and p["spec"]["subdomain"] == "db"
    # OrderedReady: each Pod was created after the previous one was Ready.
    created = [p["metadata"]["creationTimestamp"] for p in pods]
    assert created == sorted(created)
    claims = ns.api.get(f"/api/v1/namespaces/{ns.name}/persistentvolumeclaims").json()["items"]
    by_name = {c["metadata"]["name"]: c for c in claims}
    assert sorted(by_name) == ["data-db-0", "data-db-1", "data-db-2"]
    for p in pods:
        claim = by_name[f"data-{p['metadata']['name']}"]
        assert claim["status"]["phase"] == "Bound" and claim["spec"]["storageClassName"] == late
        volume = api.get(f"/api/v1/persistentvolumes/{claim['spec']['volumeName']}").json()
        # Provisioned on the node the scheduler chose (WaitForFirstConsumer).
        terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert terms[0]["matchExpressions"][0]["values"] == [node_of(p)]
    # A deleted Pod comes back with its name and its claim. kubectl's own wait (a GET, then a list and a
    # watch for DELETED) hangs when the Pod of the same name is back between its GET and its list: the
    # test waits for the new Pod itself.
    kubectl("delete", "pod", "db-1", "--wait=false")
    ns.wait(lambda: (p := ns.get("pods", "db-1")) and p["metadata"]["uid"] != pods[1]["metadata"]["uid"]
            and p["status"].get("phase") == "Running" and p, "db-1 re-created")
    assert any(v.get("persistentVolumeClaim", {}).get("claimName") == "data-db-1"
               for v in ns.pod("db-1")["spec"]["volumes"])
    # Scaling down removes the highest ordinals and keeps their claims.
    kubectl("scale", "statefulset", "db", "--replicas=1")
    ns.wait(lambda: [p["metadata"]["name"] for p in ns.pods("app=db")] == ["db-0"], "db-1 and db-2 gone")
    claims = ns.api.get(f"/api/v1/namespaces/{ns.name}/persistentvolumeclaims").json()["items"]
    assert len(claims) == 3
    revisions = apis(api, ns.name, "apps/v1/controllerrevisions")["items"]
    status = apis(api, ns.name, "apps/v1/statefulsets/db")["status"]
    assert status["currentRevision"] == status["updateRevision"] == revisions[0]["metadata"]["name"]


def test_a_daemonset_skips_a_tainted_node_and_follows_a_new_one(kubectl: Kubectl, admin: Kubectl,
                                                               api: httpx.Client, ns: NamespaceReader,
                                                               nodes: tuple[str, ...],
                                                               cluster: harness.Cluster) -> None:
    admin("taint", "nodes", "node-3", "dedicated=gpu:NoSchedule")
    labels = {"app": "agent"}
    kubectl.apply({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
                   "spec": {"selector": {"matchLabels": labels},
                            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                            "template": template(labels, image="fluentd")}})
    assert sorted(node_of(p) for p in ns.wait_running("app=agent", 2)) == ["node-1", "node-2"]
    # The controller writes status after it sees the Pods Ready, as Kubernetes' does: eventually.
    def counts() -> tuple[int, int, int]:
        status = apis(api, ns.name, "apps/v1/daemonsets/agent").get("status", {})
        return status.get("desiredNumberScheduled"), status.get("numberReady"), status.get("numberMisscheduled")
    ns.wait(lambda: counts() == (2, 2, 0), "status desiredNumberScheduled=2 numberReady=2 numberMisscheduled=0")
    pod = ns.pods("app=agent")[0]
    keys = {(t["key"], t.get("effect")) for t in pod["spec"]["tolerations"]}
    assert {("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule")
            } <= keys
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchFields"][0]["key"] == "metadata.name"
    # The taint removed: node-3 gets its Pod.
    admin("taint", "nodes", "node-3", "dedicated=gpu:NoSchedule-")
    assert sorted(node_of(p) for p in ns.wait_running("app=agent", 3)) == ["node-1", "node-2", "node-3"]
    # A node that joins later (a second kubelet_sim with one node) gets one too.
    late = _start_late_node(cluster)
    try:
        ns.wait(lambda: any(node_of(p) == "node-late" and kube.is_ready(p) for p in ns.pods("app=agent")),
                "a running Pod on node-late")
        assert apis(api, ns.name, "apps/v1/daemonsets/agent")["status"]["desiredNumberScheduled"] == 4
        kubectl("set", "image", "daemonset/agent", "c=fluentd:2")
        out = kubectl("rollout", "status", "daemonset/agent", "--timeout=90s")
        assert out.splitlines()[-1] == 'daemon set "agent" successfully rolled out'
        assert {p["spec"]["containers"][0]["image"] for p in ns.wait_running("app=agent", 4)} == {"fluentd:2"}
    finally:
        late.stop()
        api.delete("/api/v1/nodes/node-late")
    ns.wait(lambda: not any(node_of(p) == "node-late" for p in ns.pods("app=agent")), "node-late's Pod removed")


def _start_late_node(cluster: harness.Cluster) -> procs.ManagedProcess:
    profile = yaml.safe_load((resources.files("kubelet_sim") / "default-profile.yaml").read_text())
    group = profile["nodeGroups"][0]
    group.update(count=1, namePattern="node-late", zones=["zone-d"])
    profile["timings"].update(containerStartDelay="300ms", containerStartJitter="100ms")
    path = cluster.workdir / "late-node.yaml"
    path.write_text(yaml.safe_dump(profile))
    health = procs.free_port()
    # Its own identity, as a kubelet bootstraps one: a client certificate for system:node:node-late.
    kubeconfig = cluster.user_kubeconfig("system:node:node-late", ("system:nodes",))
    return cluster.start_component(
        "kubelet_sim", ["--kubeconfig", str(kubeconfig), "--health-port", str(health),
                        "--node-profile", str(path), "--node-lease-renew-interval", "1s",
                        "--kubelet-port", str(procs.free_port())],
        name="kubelet-late", ready_url=f"http://{procs.LOOPBACK}:{health}/readyz")


# --- Services, quotas, disruption, autoscaling ---------------------------------------------------------


def test_endpoints_follow_the_pods(kubectl: Kubectl, api: httpx.Client, ns: NamespaceReader) -> None:
    kubectl.apply(deployment("web", 2), {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                                         "spec": {"selector": {"app": "web"},
                                                  "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})
    pods = ns.wait_running("app=web", 2)
    ips = sorted(p["status"]["podIP"] for p in pods)
    jsonpath = "{range .subsets[*].addresses[*]}{.ip}{' '}{.targetRef.name}{' '}{.nodeName}{'\\n'}{end}"
    out = ns.wait(lambda: (o := kubectl("get", "endpoints", "web", "-o", f"jsonpath={jsonpath}"))
                  and all(ip in o for ip in ips) and o, "the endpoints")
    assert sorted(line.split() for line in out.splitlines()) == sorted(
        [p["status"]["podIP"], p["metadata"]["name"], node_of(p)] for p in pods)
    assert re.search(r"Endpoints:\s+" + re.escape(",".join(f"{ip}:80" for ip in ips)),
                     kubectl("describe", "svc", "web"))
    slices = apis(api, ns.name, "discovery.k8s.io/v1/endpointslices")["items"]
    [s] = [s for s in slices if s["metadata"]["labels"]["kubernetes.io/service-name"] == "web"]
    assert sorted(e["addresses"][0] for e in s["endpoints"]) == ips
    assert all(e["conditions"]["ready"] for e in s["endpoints"])
    kubectl("scale", "deployment", "web", "--replicas=3")
    ns.wait(lambda: len(api.get(f"/api/v1/namespaces/{ns.name}/endpoints/web").json()["subsets"][0]
                        .get("addresses", [])) == 3, "a third address")


def test_kubectl_get_endpoints_prints_the_addresses(kubectl: Kubectl, ns: NamespaceReader) -> None:
    kubectl.apply(deployment("web", 1), {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                                         "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    [pod] = ns.wait_running("app=web", 1)
    out = ns.wait(lambda: (o := kubectl("get", "endpoints", "web")) and "CREATED AT" not in o and o, "a row")
    assert out.splitlines()[0].split() == ["NAME", "ENDPOINTS", "AGE"]
    assert out.splitlines()[1].split()[1] == f"{pod['status']['podIP']}:80"


def test_a_resource_quota_refuses_the_pod_over_it(kubectl: Kubectl, api: httpx.Client, ns: NamespaceReader) -> None:
    kubectl.apply({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
                   "spec": {"hard": {"pods": "2", "count/deployments.apps": "1"}}})
    ns.wait(lambda: (api.get(f"/api/v1/namespaces/{ns.name}/resourcequotas/q").json().get("status") or {})
            .get("used"), "the quota counted")
    kubectl("run", "a", "--image=nginx")
    kubectl("run", "b", "--image=nginx")
    refused = kubectl.run("run", "c", "--image=nginx", check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == ('Error from server (Forbidden): pods "c" is forbidden: exceeded quota: q, '
                                      "requested: pods=1, used: pods=2, limited: pods=2")
    kubectl.apply(deployment("one", 0))
    refused = kubectl.run("apply", "-f", "-", input=yaml.safe_dump(deployment("two", 0)), check=False)
    assert "exceeded quota: q, requested: count/deployments.apps=1, used: count/deployments.apps=1" in refused.stderr
    out = kubectl("describe", "quota", "q")
    assert re.search(r"pods\s+2\s+2", out)


def test_drain_respects_a_pod_disruption_budget(kubectl: Kubectl, admin: Kubectl, api: httpx.Client,
                                               ns: NamespaceReader, nodes: tuple[str, ...]) -> None:
    kubectl.apply(deployment("web", 3), {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                         "metadata": {"name": "web"},
                                         "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}})
    ns.wait_running("app=web", 3)
    pdb = ns.wait(lambda: (p := apis(api, ns.name, "policy/v1/poddisruptionbudgets/web")).get("status", {}).get(
        "currentHealthy") == 3 and p, "the PDB status")
    assert {k: pdb["status"][k] for k in ("currentHealthy", "desiredHealthy", "expectedPods",
                                          "disruptionsAllowed")} == {"currentHealthy": 3, "desiredHealthy": 2,
                                                                     "expectedPods": 3, "disruptionsAllowed": 1}
    allowed = condition(pdb, "DisruptionAllowed")
    assert allowed is not None and (allowed["status"], allowed["reason"]) == ("True", "SufficientPods")
    node = node_of(ns.pods("app=web")[0])
    out = admin("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=90s")
    assert out.strip().endswith(f"node/{node} drained")
    ns.wait_running("app=web", 3)
    admin("uncordon", node)


def test_drain_waits_while_a_budget_allows_no_disruption(kubectl: Kubectl, admin: Kubectl, api: httpx.Client,
                                                        ns: NamespaceReader, nodes: tuple[str, ...]) -> None:
    kubectl.apply(deployment("web", 2, nodeSelector={"kubernetes.io/hostname": "node-1"}),
                  {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                   "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}}})
    ns.wait_running("app=web", 2)
    done = admin.run("drain", "node-1", "--ignore-daemonsets", "--timeout=5s", check=False)
    assert "Cannot evict pod as it would violate the pod's disruption budget." in done.stderr
    admin("uncordon", "node-1")


def test_an_hpa_scales_on_cpu_from_the_metrics_api(kubectl: Kubectl, api: httpx.Client, ns: NamespaceReader) -> None:
    """The HPA controller reads PodMetrics through the aggregation layer (metrics-server scraping kubelet_sim)."""
    # Each Pod uses 200m of its 100m request: 200% against a 50% target asks for 4 times the Pods, capped at 3.
    busy = [{"name": "c", "image": "nginx:1.25", "resources": {"requests": {"cpu": "100m"}}}]
    kubectl.apply(deployment("busy", 1, annotations={"kubesim.io/cpu-usage": "200m"}, containers=busy), {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "busy"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "busy"},
                 "minReplicas": 1, "maxReplicas": 3,
                 "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                     "type": "Utilization", "averageUtilization": 50}}}]}})
    hpa = ns.wait(lambda: (h := apis(api, ns.name, "autoscaling/v2/horizontalpodautoscalers/busy"))
                  .get("status", {}).get("desiredReplicas") == 3 and h, "the HPA to ask for 3 replicas")
    ns.wait_running("app=busy", 3)
    active, limited = condition(hpa, "ScalingActive"), condition(hpa, "ScalingLimited")
    assert active is not None and (active["status"], active["reason"]) == ("True", "ValidMetricFound")
    assert limited is not None and (limited["status"], limited["reason"]) == ("True", "TooManyReplicas")
    [metric] = hpa["status"]["currentMetrics"]
    assert metric["type"] == "Resource" and metric["resource"]["name"] == "cpu"
    assert 150 <= metric["resource"]["current"]["averageUtilization"] <= 250, metric
    assert deploy(api, ns.name, "busy")["spec"]["replicas"] == 3
    ns.wait_messages("busy", "SuccessfulRescale", until=bool)
    events = kubectl("get", "events", "--field-selector", "involvedObject.kind=HorizontalPodAutoscaler")
    assert "SuccessfulRescale" in events and "cpu resource utilization (percentage of request) above target" in events
    row = kubectl("get", "hpa", "busy", "--no-headers").split()
    assert row[:2] == ["busy", "Deployment/busy"] and re.fullmatch(r"cpu: \d+%/50%", " ".join(row[2:4])), row
