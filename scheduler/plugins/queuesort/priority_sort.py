"""PrioritySort: the active queue pops higher ``spec.priority`` first, then the Pod queued earliest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from scheduler.framework.interface import Handle, QueuedPodInfoLike
from scheduler.plugins import names
from scheduler.plugins.helper import plugin_args

NAME: Final = names.PRIORITY_SORT


class PrioritySort:
    name = NAME

    def less(self, a: QueuedPodInfoLike, b: QueuedPodInfoLike) -> bool:
        pa, pb = a.pod_info.priority, b.pod_info.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)


def new(args: Mapping[str, Any] | None, handle: Handle) -> PrioritySort:
    plugin_args(args, (), NAME)
    return PrioritySort()
