"""scheduling.k8s.io: PriorityClasses."""

from __future__ import annotations

from apiserver.registry.scheduling import priorityclasses

RESOURCES = [priorityclasses.RESOURCE]
