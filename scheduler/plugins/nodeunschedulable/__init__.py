"""The NodeUnschedulable Filter plugin."""

from scheduler.plugins.nodeunschedulable.node_unschedulable import (
    ERR_REASON_UNSCHEDULABLE,
    NAME,
    NodeUnschedulable,
    new,
)

__all__ = ["ERR_REASON_UNSCHEDULABLE", "NAME", "NodeUnschedulable", "new"]
