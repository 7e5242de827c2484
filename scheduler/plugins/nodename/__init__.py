"""The NodeName Filter plugin."""

from scheduler.plugins.nodename.node_name import ERR_REASON, NAME, NodeName, new

__all__ = ["ERR_REASON", "NAME", "NodeName", "new"]
