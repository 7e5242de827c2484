"""The TaintToleration Filter and Score plugin."""

from scheduler.plugins.tainttoleration.taint_toleration import (
    NAME,
    TaintToleration,
    new,
    untolerated_taint_reason,
)

__all__ = ["NAME", "TaintToleration", "new", "untolerated_taint_reason"]
