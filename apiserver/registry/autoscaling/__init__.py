"""autoscaling: HorizontalPodAutoscalers, stored as autoscaling/v2 and also served as autoscaling/v1."""

from __future__ import annotations

from apiserver.registry.autoscaling import horizontalpodautoscalers

RESOURCES = [horizontalpodautoscalers.RESOURCE, horizontalpodautoscalers.RESOURCE_V1]
