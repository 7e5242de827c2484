"""apiregistration.k8s.io: APIServices."""

from __future__ import annotations

from apiserver.registry.apiregistration import apiservices

RESOURCES = [apiservices.RESOURCE]
