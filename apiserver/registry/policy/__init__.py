"""policy: PodDisruptionBudgets."""

from __future__ import annotations

from apiserver.registry.policy import poddisruptionbudgets

RESOURCES = [poddisruptionbudgets.RESOURCE]
