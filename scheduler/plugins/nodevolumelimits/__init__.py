"""NodeVolumeLimits: no node gets more CSI volumes than its CSINode says it can attach."""

from scheduler.plugins.nodevolumelimits.csi import NAME, NodeVolumeLimits, new

__all__ = ["NAME", "NodeVolumeLimits", "new"]
