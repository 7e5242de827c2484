"""The VolumeRestrictions PreFilter and Filter plugin."""

from scheduler.plugins.volumerestrictions.volume_restrictions import (
    ERR_REASON_DISK_CONFLICT,
    NAME,
    VolumeRestrictions,
    new,
    volumes_conflict,
)

__all__ = ["ERR_REASON_DISK_CONFLICT", "NAME", "VolumeRestrictions", "new", "volumes_conflict"]
