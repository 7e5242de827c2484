"""apiextensions.k8s.io: CustomResourceDefinitions."""

from __future__ import annotations

from apiserver.registry.apiextensions import customresourcedefinitions

RESOURCES = [customresourcedefinitions.RESOURCE]
