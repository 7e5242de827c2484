"""The SchedulingGates PreEnqueue plugin."""

from scheduler.plugins.schedulinggates.scheduling_gates import NAME, SchedulingGates, new

__all__ = ["NAME", "SchedulingGates", "new"]
