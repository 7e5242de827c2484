"""The DefaultPreemption PostFilter plugin."""

from scheduler.plugins.defaultpreemption.default_preemption import (
    NAME,
    NO_VICTIMS,
    NOT_ELIGIBLE_NEVER,
    NOT_ELIGIBLE_TERMINATING,
    NOT_HELPFUL,
    PREEMPTION_BY_SCHEDULER,
    Candidate,
    DefaultPreemption,
    new,
    select_candidate,
)

__all__ = [
    "NAME", "NOT_ELIGIBLE_NEVER", "NOT_ELIGIBLE_TERMINATING", "NOT_HELPFUL", "NO_VICTIMS",
    "PREEMPTION_BY_SCHEDULER", "Candidate", "DefaultPreemption", "new", "select_candidate",
]
