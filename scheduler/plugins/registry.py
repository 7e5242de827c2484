"""The in-tree registry: plugin name -> factory, as ``NewInTreeRegistry``.

Kubernetes' default profile also enables VolumeZone and the cloud disk
limits (EBS, GCE PD, Azure Disk), which have nothing to decide on kubesim's
simulated storage and are not registered.
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
    nodevolumelimits,
    podtopologyspread,
    queuesort,
    schedulinggates,
    tainttoleration,
    volumebinding,
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
    nodevolumelimits.NAME: nodevolumelimits.new,
    volumebinding.NAME: volumebinding.new,
    podtopologyspread.NAME: podtopologyspread.new,
    interpodaffinity.NAME: interpodaffinity.new,
    defaultpreemption.NAME: defaultpreemption.new,
    balanced_allocation.NAME: balanced_allocation.new,
    imagelocality.NAME: imagelocality.new,
    defaultbinder.NAME: defaultbinder.new,
}
