"""Nodes: cluster-scoped, created by their kubelet with their status; ``spec.unschedulable`` is selectable."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.core import connect
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import core as validation
from apiserver.validation import defaults
from apiserver.validation.field import FieldError
from machinery.api import kinds, meta


class NodeStrategy(Strategy):
    selectable_fields: ClassVar[tuple[str, ...]] = ("spec.unschedulable",)

    def supports_field(self, path: str) -> bool:
        # Kubernetes' field labels for Nodes: no metadata.namespace.
        return path in ("metadata.name", "spec.unschedulable")

    def prepare_for_create(self, obj: Obj) -> None:
        # A kubelet registers its Node with status filled in; kube-apiserver keeps it.
        pass

    def fields(self, obj: Obj) -> dict[str, str]:
        out = super().fields(obj)
        # kube-apiserver reports an unset spec.unschedulable as "false".
        out["spec.unschedulable"] = out["spec.unschedulable"] or "false"
        return out

    def default(self, obj: Obj) -> None:
        defaults.default_node(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_node(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_node_update(new, old)


class NodeStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_node_status_update(new, old)


_STRATEGY: Final = NodeStrategy()

# --- printer ------------------------------------------------------------------------------------

_CORE = "io.k8s.api.core.v1."
_NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
_NODE_ROLE_LABEL = "kubernetes.io/role"

COLUMNS: Final = (
    printers.NAME,
    Column("Status", "string", "The status of the node"),
    Column("Roles", "string", "The roles of the node"),
    printers.AGE,
    Column("Version", "string", (_CORE + "NodeSystemInfo", "kubeletVersion")),
    Column("Internal-IP", "string", (_CORE + "NodeStatus", "addresses"), 1),
    Column("External-IP", "string", (_CORE + "NodeStatus", "addresses"), 1),
    Column("OS-Image", "string", (_CORE + "NodeSystemInfo", "osImage"), 1),
    Column("Kernel-Version", "string", (_CORE + "NodeSystemInfo", "kernelVersion"), 1),
    Column("Container-Runtime", "string", (_CORE + "NodeSystemInfo", "containerRuntimeVersion"), 1),
)


def _node_roles(labels: dict[str, str]) -> str:
    roles = set()
    for key, value in labels.items():
        if key.startswith(_NODE_ROLE_PREFIX) and len(key) > len(_NODE_ROLE_PREFIX):
            roles.add(key[len(_NODE_ROLE_PREFIX):])
        elif key == _NODE_ROLE_LABEL and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"


def _node_address(status: Obj, kind: str) -> str:
    for address in status.get("addresses") or ():
        if address.get("type") == kind:
            return str(address.get("address", ""))
    return "<none>"


def _row(node: Obj, now: datetime) -> Row:
    metadata: Obj = node.get("metadata") or {}
    status: Obj = node.get("status") or {}
    info: Obj = status.get("nodeInfo") or {}
    ready = meta.get_condition(status.get("conditions"), "Ready")
    states = ["Unknown" if ready is None else "Ready" if ready.get("status") == "True" else "NotReady"]
    if (node.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    return Row([
        metadata.get("name", ""), ",".join(states), _node_roles(metadata.get("labels") or {}),
        since(metadata.get("creationTimestamp"), now), info.get("kubeletVersion", ""),
        _node_address(status, "InternalIP"), _node_address(status, "ExternalIP"),
        info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.NODES,
    strategy=_STRATEGY,
    subresources={
        "status": StatusREST(NodeStatusStrategy(_STRATEGY)),
        "proxy": connect.NodeProxyREST(),
    },
    printer=PRINTER,
)
