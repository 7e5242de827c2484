"""coordination.k8s.io: Leases."""

from __future__ import annotations

from apiserver.registry.coordination import leases

RESOURCES = [leases.RESOURCE]
