"""Write kubesim/studies/traces/spread-vs-pack.jsonl, the small built-in trace of ``kubesim compare``.

Six 4-cpu nodes join in three zones; a ReplicationController of 500m Pods
starts at 6 replicas and scales to 12; four 1-cpu Pods come and one goes.
About 9 of the 24 cpus end up requested: LeastAllocated spreads them over
every node, MostAllocated packs them onto a few. Run from the repository's
root: ``.venv/bin/python hack/gen_builtin_trace.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesim.studies.objects import portable
from kubesim.studies.traceformat import Header, Writer

OUT = Path("kubesim/studies/traces/spread-vs-pack.jsonl")
HEALTHY = [("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
           ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
           ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
           ("Ready", "True", "KubeletReady", "kubelet is posting ready status")]


def node(i: int) -> dict[str, Any]:
    name = f"worker-{i}"
    resources = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": f"zone-{'abc'[(i - 1) % 3]}"}},
            "spec": {"podCIDR": f"10.1.{i}.0/24", "podCIDRs": [f"10.1.{i}.0/24"]},
            "status": {"capacity": resources, "allocatable": resources,
                       "conditions": [{"type": t, "status": s, "reason": r, "message": m} for t, s, r, m in HEALTHY]}}


def container(cpu: str, memory: str) -> dict[str, Any]:
    return {"name": "app", "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": cpu, "memory": memory}}}


def rc(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ReplicationController",
            "metadata": {"name": "web", "namespace": "demo"},
            "spec": {"replicas": replicas, "selector": {"app": "web"},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [container("500m", "1Gi")]}}}}


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "demo",
                                                           "labels": {"app": "batch"}},
            "spec": {"containers": [container("1", "2Gi")]}}


def main() -> None:
    writer = Writer(OUT, Header("2026-01-01T00:00:00.000000Z", "builtin", (
        "Namespace", "Node", "Pod", "ReplicationController")))
    for i in range(1, 7):
        writer.write(0.1 * i, "ADDED", portable(node(i)))
    writer.write(1.0, "ADDED", portable({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}))
    writer.write(2.0, "ADDED", portable(rc(6)))
    writer.write(10.0, "MODIFIED", portable(rc(12)))
    for i in range(1, 5):
        writer.write(15.0 + 0.5 * i, "ADDED", portable(pod(f"batch-{i}")))
    writer.write(25.0, "MODIFIED", portable(pod("batch-1")), {"deleting": True})
    writer.write(25.1, "DELETED", portable(pod("batch-1")))
    writer.close(30.0)


if __name__ == "__main__":
    main()
