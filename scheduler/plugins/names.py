"""Every in-tree plugin's name, as Kubernetes spells it (``pkg/scheduler/framework/plugins/names``).

Profiles, statuses, Events and metrics name plugins by these strings; each
plugin module takes its ``NAME`` from here so that a name is written once.
"""

from __future__ import annotations

from typing import Final

PRIORITY_SORT: Final = "PrioritySort"
SCHEDULING_GATES: Final = "SchedulingGates"
NODE_UNSCHEDULABLE: Final = "NodeUnschedulable"
NODE_NAME: Final = "NodeName"
TAINT_TOLERATION: Final = "TaintToleration"
NODE_AFFINITY: Final = "NodeAffinity"
NODE_PORTS: Final = "NodePorts"
NODE_RESOURCES_FIT: Final = "NodeResourcesFit"
NODE_RESOURCES_BALANCED_ALLOCATION: Final = "NodeResourcesBalancedAllocation"
VOLUME_RESTRICTIONS: Final = "VolumeRestrictions"
VOLUME_BINDING: Final = "VolumeBinding"
NODE_VOLUME_LIMITS: Final = "NodeVolumeLimits"
POD_TOPOLOGY_SPREAD: Final = "PodTopologySpread"
INTER_POD_AFFINITY: Final = "InterPodAffinity"
IMAGE_LOCALITY: Final = "ImageLocality"
DEFAULT_PREEMPTION: Final = "DefaultPreemption"
DEFAULT_BINDER: Final = "DefaultBinder"
