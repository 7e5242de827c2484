"""The PodTopologySpread PreFilter, Filter and Score plugin."""

from scheduler.plugins.podtopologyspread.common import NAME
from scheduler.plugins.podtopologyspread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
)
from scheduler.plugins.podtopologyspread.pod_topology_spread import PodTopologySpread, new

__all__ = ["ERR_REASON_CONSTRAINTS_NOT_MATCH", "ERR_REASON_NODE_LABEL_NOT_MATCH", "NAME", "PodTopologySpread", "new"]
