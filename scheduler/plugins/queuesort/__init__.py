"""The QueueSort plugin: in which order the active queue hands Pods to the scheduling cycle."""

from scheduler.plugins.queuesort.priority_sort import NAME, PrioritySort, new

__all__ = ["NAME", "PrioritySort", "new"]
