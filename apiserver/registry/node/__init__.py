"""node.k8s.io: RuntimeClasses."""

from __future__ import annotations

from apiserver.registry.node import runtimeclasses

RESOURCES = [runtimeclasses.RESOURCE]
