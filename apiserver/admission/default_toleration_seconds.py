"""DefaultTolerationSeconds: every Pod tolerates not-ready and unreachable nodes for a while.

As Kubernetes' plugin: a Pod without a toleration of the
``node.kubernetes.io/not-ready`` or ``node.kubernetes.io/unreachable``
NoExecute taint gets one with ``tolerationSeconds`` from
``--default-not-ready-toleration-seconds`` and
``--default-unreachable-toleration-seconds`` (300 s each), so that the node
lifecycle controller evicts its Pods five minutes after a node stops reporting.
"""

from __future__ import annotations

from typing import Final

from apiserver.admission.chain import Attributes, Plugin
from machinery.api import kinds

NOT_READY_TAINT: Final = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT: Final = "node.kubernetes.io/unreachable"


class DefaultTolerationSeconds(Plugin):
    name = "DefaultTolerationSeconds"
    operations = frozenset({"CREATE", "UPDATE"})

    def __init__(self, *, not_ready_seconds: int = 300, unreachable_seconds: int = 300) -> None:
        self.seconds = {NOT_READY_TAINT: not_ready_seconds, UNREACHABLE_TAINT: unreachable_seconds}

    def handles(self, attrs: Attributes) -> bool:
        return super().handles(attrs) and attrs.resource is kinds.PODS and not attrs.subresource

    async def admit(self, attrs: Attributes) -> None:
        if attrs.object is not None:
            add_default_tolerations(attrs.object.setdefault("spec", {}), self.seconds)


def add_default_tolerations(spec: dict[str, object], seconds: dict[str, int]) -> None:
    tolerations = spec.get("tolerations") or []
    assert isinstance(tolerations, list)
    for taint, after in seconds.items():
        tolerated = any(isinstance(t, dict) and t.get("key") in (taint, "", None)
                        and t.get("effect") in ("NoExecute", "", None) for t in tolerations)
        if not tolerated:
            tolerations.append({"key": taint, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": after})
    spec["tolerations"] = tolerations
