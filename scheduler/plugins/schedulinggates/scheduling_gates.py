"""SchedulingGates: a Pod with ``spec.schedulingGates`` waits, unscheduled, until every gate is removed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from scheduler.framework.interface import SUCCESS, Code, Handle, Status
from scheduler.framework.types import PodInfo
from scheduler.plugins import names
from scheduler.plugins.helper import plugin_args

NAME: Final = names.SCHEDULING_GATES


class SchedulingGates:
    name = NAME

    def pre_enqueue(self, pod: PodInfo) -> Status:
        gates = pod.pod.spec.scheduling_gates if pod.pod.spec is not None else None
        if not gates:
            return SUCCESS
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                      f"waiting for scheduling gates: [{' '.join(g.name for g in gates)}]", plugin=NAME)


def new(args: Mapping[str, Any] | None, handle: Handle) -> SchedulingGates:
    plugin_args(args, (), NAME)
    return SchedulingGates()
