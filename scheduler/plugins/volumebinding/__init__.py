"""VolumeBinding: Pods with PersistentVolumeClaims go where their volumes are, or can be made."""

from scheduler.plugins.volumebinding.volume_binding import NAME, VolumeBinding, new

__all__ = ["NAME", "VolumeBinding", "new"]
