"""The NodeResourcesFit (Filter, Score) and NodeResourcesBalancedAllocation (Score) plugins."""

from scheduler.plugins.noderesources import balanced_allocation, fit

__all__ = ["balanced_allocation", "fit"]
