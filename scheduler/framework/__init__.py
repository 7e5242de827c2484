"""The scheduling framework: extension points, statuses, cycle state, NodeInfo/PodInfo and the runtime.

Plugins import from here; see :mod:`.interface` for the protocols,
:mod:`.types` for NodeInfo and PodInfo, :mod:`.runtime` for how a profile's
plugins run and :mod:`.diagnosis` for the FailedScheduling message.
"""
