"""apps: Deployments, ReplicaSets, StatefulSets, DaemonSets, ControllerRevisions."""

from __future__ import annotations

from apiserver.registry.apps import controllerrevisions, daemonsets, deployments, replicasets, statefulsets

RESOURCES = [
    controllerrevisions.RESOURCE,
    daemonsets.RESOURCE,
    deployments.RESOURCE,
    replicasets.RESOURCE,
    statefulsets.RESOURCE,
]
