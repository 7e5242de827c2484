"""The DefaultBinder Bind plugin."""

from scheduler.plugins.defaultbinder.default_binder import NAME, DefaultBinder, new

__all__ = ["NAME", "DefaultBinder", "new"]
