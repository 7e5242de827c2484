"""Synthetic traces in the recorded format, for benchmarks: a cluster's half hour, made up but plausible.

``kubesim bench --scenario replay`` needs a 30-minute, 1,000-node trace;
recording one takes 30 minutes, so :func:`cluster_trace` writes what a
recording of such a cluster holds (the client actions: everything else a
recording keeps, replay ignores): nodes joining in the first minute,
namespaces, ReplicationControllers created over the first ten minutes and
scaled up and down every 30 seconds, a steady churn of bare Pods that live a
minute each, and a second wave of nodes at two thirds of the way. Times and
choices come from a seeded random source, so a seed gives the same trace.

Pure; the trace is built in memory.
"""

from __future__ import annotations

import random
from typing import Any

from kubesim.studies.objects import portable
from kubesim.studies.traceformat import Header, Record, Trace

_HEALTHY = (("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            ("Ready", "True", "KubeletReady", "kubelet is posting ready status"))


def _node(name: str, zone: str) -> dict[str, Any]:
    resources = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                  "kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": zone}},
            "spec": {}, "status": {"capacity": resources, "allocatable": resources,
                                   "conditions": [{"type": t, "status": s, "reason": r, "message": m}
                                                  for t, s, r, m in _HEALTHY]}}


def _container(cpu: str, memory: str) -> dict[str, Any]:
    return {"name": "app", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu, "memory": memory}}}


def _rc(name: str, namespace: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"app": name},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [_container("250m", "512Mi")]}}}}


def _pod(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [_container("100m", "128Mi")]}}


def cluster_trace(*, nodes: int = 1000, seconds: float = 1800.0, seed: int = 1) -> Trace:
    """The trace (see the module docstring); sizes scale with ``nodes`` and ``seconds``."""
    rng = random.Random(seed)
    events: list[tuple[float, str, dict[str, Any], dict[str, Any]]] = []
    first_wave = nodes * 9 // 10
    for i in range(first_wave):
        events.append((60.0 * i / first_wave, "ADDED", _node(f"node-{i + 1}", f"zone-{'abc'[i % 3]}"), {}))
    for i in range(first_wave, nodes):
        events.append((seconds * 2 / 3 + (i - first_wave) * 0.2, "ADDED",
                       _node(f"node-{i + 1}", f"zone-{'abc'[i % 3]}"), {}))
    namespaces = [f"team-{i}" for i in range(10)]
    for i, ns in enumerate(namespaces):
        events.append((60.0 + i, "ADDED", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, {}))
    controllers = max(5, nodes // 20)
    replicas: dict[tuple[str, str], int] = {}
    ramp = min(600.0, seconds / 3)
    for i in range(controllers):
        ns, name = namespaces[i % len(namespaces)], f"svc-{i}"
        replicas[(ns, name)] = 20
        events.append((75.0 + ramp * i / controllers, "ADDED", _rc(name, ns, 20), {}))
    t = 75.0 + ramp
    while t < seconds - 30:
        (ns, name), count = rng.choice(sorted(replicas.items()))
        scaled = max(5, min(40, count + rng.choice((-10, -5, 5, 10, 15))))
        if scaled != count:  # a recorder writes no change that changes nothing
            replicas[(ns, name)] = scaled
            events.append((t, "MODIFIED", _rc(name, ns, scaled), {}))
        t += 30.0
    t, index = ramp + 75.0, 0
    while t + 60.5 <= seconds:  # its deletion too falls inside the trace
        ns = namespaces[index % len(namespaces)]
        body = _pod(f"job-{index}", ns)
        events.append((t, "ADDED", body, {}))
        events.append((t + 60.0, "MODIFIED", body, {"deleting": True}))
        events.append((t + 60.5, "DELETED", body, {}))
        t += 2.0 * rng.uniform(0.5, 1.5)
        index += 1
    events.sort(key=lambda e: e[0])
    records = [Record(i, round(at, 6), kind, portable(obj), observed)  # type: ignore[arg-type]
               for i, (at, kind, obj, observed) in enumerate(events, start=1)]
    header = Header("2026-01-01T00:00:00.000000Z", f"synthetic: {nodes} nodes, {seconds:.0f}s, seed {seed}",
                    ("Namespace", "Node", "Pod", "ReplicationController"))
    return Trace(header, records, seconds)
