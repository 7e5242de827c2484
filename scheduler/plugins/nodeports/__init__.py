"""The NodePorts PreFilter and Filter plugin."""

from scheduler.plugins.nodeports.node_ports import ERR_REASON, NAME, NodePorts, new

__all__ = ["ERR_REASON", "NAME", "NodePorts", "new"]
