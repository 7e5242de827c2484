"""The in-tree registry: plugin name -> factory, as ``NewInTreeRegistry``.

Kubernetes' default profile also enables volume plugins (VolumeBinding,
VolumeZone, NodeVolumeLimits and the cloud disk limits); kubesim serves no
PersistentVolumes, CSI or StorageClasses, so they have nothing to decide and
are not registered.
"""

from __future__ import annotations

from typing import Final

from scheduler.framework.interface import PluginFactory
from scheduler.plugins import (
    defaultbinder,
    defaultpreemption,
    imagelocality,
    interpodaffinity,
    nodeaffinity,
    nodename,
    nodeports,
    nodeunschedulable,
    podtopologyspread,
    queuesort,
    schedulinggates,
    tainttoleration,
    volumerestrictions,
)
from scheduler.plugins.noderesources import balanced_allocation, fit

IN_TREE: Final[dict[str, PluginFactory]] = {
    queuesort.NAME: queuesort.new,
    schedulinggates.NAME: schedulinggates.new,
    nodeunschedulable.NAME: nodeunschedulable.new,
    nodename.NAME: nodename.new,
    tainttoleration.NAME: tainttoleration.new,
    nodeaffinity.NAME: nodeaffinity.new,
    nodeports.NAME: nodeports.new,
    fit.NAME: fit.new,
    volumerestrictions.NAME: volumerestrictions.new,
    podtopologyspread.NAME: podtopologyspread.new,
    interpodaffinity.NAME: interpodaffinity.new,
    defaultpreemption.NAME: defaultpreemption.new,
    balanced_allocation.NAME: balanced_allocation.new,
    imagelocality.NAME: imagelocality.new,
    defaultbinder.NAME: defaultbinder.new,
}
