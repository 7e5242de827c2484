"""discovery.k8s.io: EndpointSlices."""

from __future__ import annotations

from apiserver.registry.discovery import endpointslices

RESOURCES = [endpointslices.RESOURCE]
