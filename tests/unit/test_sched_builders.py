"""Builders shared by the scheduler's unit tests: nodes, Pods, a cache and frameworks without any server.

No tests here; the other ``test_sched_*`` modules import these.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, cast

from kubernetes.client import V1Node, V1Pod, V1ReplicationController

from machinery.api.kinds import REPLICATION_CONTROLLERS
from machinery.client import Client
from machinery.client.objects import decode, key_of
from machinery.informer.store import NAMESPACE_INDEX, Store, index_by_namespace
from scheduler.cache import Cache
from scheduler.framework.interface import CycleState, Status
from scheduler.framework.runtime import ClusterView, Framework, ProfileSpec
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.registry import IN_TREE
from scheduler.profile import default_config, parse_config
from scheduler.schedule_one import Algorithm


def node(name: str, *, cpu: str = "4", memory: str = "32Gi", pods: int = 110, labels: Mapping[str, str] | None = None,
         taints: Sequence[Mapping[str, str]] = (), unschedulable: bool = False,
         images: Sequence[tuple[list[str], int]] = (), extra: Mapping[str, str] | None = None) -> V1Node:
    allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra or {})}
    return V1Node.model_validate({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": list(taints), "unschedulable": unschedulable},
        "status": {"allocatable": allocatable, "capacity": allocatable,
                   "images": [{"names": names, "sizeBytes": size} for names, size in images]},
    })


def pod(name: str, *, namespace: str = "default", cpu: str | None = None, memory: str | None = None,
        labels: Mapping[str, str] | None = None, node_name: str | None = None, priority: int | None = None,
        uid: str | None = None, requests: Mapping[str, str] | None = None, image: str = "pause",
        init_requests: Sequence[Mapping[str, str]] = (), ports: Sequence[Mapping[str, Any]] = (),
        **spec: Any) -> V1Pod:
    """A Pod; ``spec`` takes camelCase spec fields (``tolerations=[...]``, ``affinity={...}``...)."""
    resources = dict(requests or {})
    if cpu:
        resources["cpu"] = cpu
    if memory:
        resources["memory"] = memory
    container: dict[str, Any] = {"name": "c", "image": image, "resources": {"requests": resources}}
    if ports:
        container["ports"] = list(ports)
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{namespace}-{name}",
                     "labels": dict(labels or {})},
        "spec": {"containers": [container], **spec},
    }
    if init_requests:
        body["spec"]["initContainers"] = [{"name": f"init-{i}", "image": "busybox", "resources": {"requests": dict(r)}}
                                          for i, r in enumerate(init_requests)]
    if node_name:
        body["spec"]["nodeName"] = node_name
    if priority is not None:
        body["spec"]["priority"] = priority
    return V1Pod.model_validate(body)


def cache_of(nodes: Sequence[V1Node], pods: Sequence[V1Pod] = ()) -> Cache:
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    for p in pods:
        cache.add_pod(p)
    return cache


class FakeCluster:
    """The scheduler's side of a ClusterView, for tests: namespaces, RCs, nominations, recorded preemptions."""

    def __init__(self, cache: Cache, *, namespaces: Mapping[str, Mapping[str, str]] | None = None,
                 rc_selectors: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
                 objects: Mapping[str, list[Mapping[str, Any]]] | None = None) -> None:
        self.cache = cache
        self.objects = dict(objects or {})
        self.namespaces = dict(namespaces or {"default": {}})
        self.rc_selectors = dict(rc_selectors or {})
        self.nominated: dict[str, list[PodInfo]] = {}
        self.preempted: list[tuple[str, str, list[str]]] = []

    def view(self) -> ClusterView:
        return ClusterView(
            client=cast(Client, None), snapshot=self.cache,
            namespace_labels=lambda ns: self.namespaces.get(ns),
            namespaces_matching=lambda sel: [n for n, labels in self.namespaces.items() if sel.matches(labels)],
            lister=self._lister,
            nominated_pods_for_node=lambda n: self.nominated.get(n, []),
            nominated_node_names=lambda: [n for n, pods in self.nominated.items() if pods],
            preempt=lambda profile, p, n, victims: self.preempted.append((p.key, n, [v.key for v in victims])))

    def _lister(self, resource: Any) -> Store[Any] | None:
        """RCs from ``rc_selectors``, and whatever ``objects`` holds for other resources."""
        store: Store[Any] = Store({NAMESPACE_INDEX: index_by_namespace})
        if resource is REPLICATION_CONTROLLERS:
            for (ns, name), selector in self.rc_selectors.items():
                store.upsert(f"{ns}/{name}", decode(V1ReplicationController, {  # type: ignore[arg-type]
                    "metadata": {"name": name, "namespace": ns}, "spec": {"selector": dict(selector)}}))
        for obj in self.objects.get(resource.plural, ()):
            model = decode(resource.model, dict(obj))
            store.upsert(key_of(model), model)
        return store

    def framework(self, config: Mapping[str, Any] | None = None, profile: int = 0) -> Framework:
        spec: ProfileSpec = (parse_config(config) if config is not None else default_config()).profiles[profile]
        return Framework(spec, IN_TREE, self.view())


def framework_for(cache: Cache, config: Mapping[str, Any] | None = None, **cluster: Any) -> Framework:
    return FakeCluster(cache, **cluster).framework(config)


def run_filter(fwk: Framework, pod_info: PodInfo, node_info: NodeInfo) -> Status:
    """PreFilter then Filter of every plugin on one node, as a cycle would (a PreFilter rejection is returned)."""
    state = CycleState()
    outcome = fwk.run_pre_filter(state, pod_info, fwk.snapshot.node_infos())
    if not outcome.status.is_success():
        return outcome.status
    if outcome.result is not None and outcome.result.node_names is not None and \
            node_info.name not in outcome.result.node_names:
        return Status(outcome.status.code, "excluded by PreFilter")
    return fwk.run_filter(state, pod_info, node_info)


def algorithm(cache: Cache, seed: int = 1, percentage: int = 0) -> Algorithm:
    return Algorithm(cache, percentage_of_nodes_to_score=percentage, rng=random.Random(seed))


def only_plugins(*names: str, weights: Mapping[str, int] | None = None) -> dict[str, Any]:
    """A configuration whose profile runs only these plugins (plus sorting and binding)."""
    enabled: list[dict[str, Any]] = [{"name": "PrioritySort"}, {"name": "DefaultBinder"}]
    enabled += [{"name": n, "weight": (weights or {}).get(n, 1)} for n in names]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler",
                          "plugins": {"multiPoint": {"enabled": enabled, "disabled": [{"name": "*"}]}}}]}

