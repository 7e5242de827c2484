"""What several plugins share (``plugins/helper``): score normalization, broken-linear shapes, args checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.framework.interface import MAX_NODE_SCORE


def default_normalize_score(scores: Sequence[int], *, reverse: bool, max_priority: int = MAX_NODE_SCORE) -> list[int]:
    """``DefaultNormalizeScore``: scale so the highest is ``max_priority``; ``reverse`` makes low scores win.

    All-zero scores stay 0, or all become ``max_priority`` when reversed.
    """
    highest = max(scores, default=0)
    if highest <= 0:
        return [max_priority] * len(scores) if reverse else [0] * len(scores)
    if reverse:
        return [max_priority - max_priority * s // highest for s in scores]
    return [max_priority * s // highest for s in scores]


def broken_linear(shape: Sequence[tuple[int, int]], x: int) -> int:
    """``BuildBrokenLinearFunction``: the score of ``x`` on a shape of (utilization, score) points."""
    for i, (utilization, score) in enumerate(shape):
        if x <= utilization:
            if i == 0:
                return score
            prev_utilization, prev_score = shape[i - 1]
            # Go divides int64s towards zero; Python's // floors, so do it on magnitudes.
            delta = (score - prev_score) * (x - prev_utilization)
            span = utilization - prev_utilization
            step = abs(delta) // span
            return prev_score + (step if delta >= 0 else -step)
    return shape[-1][1]


def plugin_args(args: Mapping[str, Any] | None, allowed: Sequence[str], plugin: str) -> Mapping[str, Any]:
    """A plugin's ``pluginConfig`` args, refusing fields the plugin does not know (strict decoding)."""
    if args is None:
        return {}
    if not isinstance(args, Mapping):
        raise TypeError(f"args of {plugin} must be an object, not {type(args).__name__}")
    unknown = sorted(k for k in args if k not in allowed and k not in ("apiVersion", "kind"))
    if unknown:
        raise ValueError(f'strict decoding error: unknown field "{unknown[0]}"')
    return args


def int_arg(args: Mapping[str, Any], key: str, default: int, *, low: int, high: int) -> int:
    value = args.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{key}: Invalid value: {value!r}: must be an integer")
    if not low <= value <= high:
        raise ValueError(f"{key}: Invalid value: {value}: not in valid range [{low}-{high}]")
    return value
