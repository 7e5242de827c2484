"""How big a ``kubesim bench`` run is: full (the goals' sizes), ``--quick`` or ``--smoke``.

- full: the sizes each goal is stated at (5,000 nodes, 10,000 Pods...); a quiet
  machine and most of an hour.
- ``--quick``: about a tenth, a few minutes per scenario; its figures are small
  but real, and are what a laptop compares before and after a change.
- ``--smoke``: the smallest sizes that still take every step of every scenario
  (every phase, every variant, every figure computed); its figures mean nothing.
  ``make test`` runs each scenario this way, to keep the benchmarks working.

Each scenario names its three sizes in one place with :func:`pick`.
"""

from __future__ import annotations

import enum
from typing import TypeVar

T = TypeVar("T")


class Size(enum.Enum):
    FULL = "full"
    QUICK = "quick"
    SMOKE = "smoke"


def pick(size: Size, *, full: T, quick: T, smoke: T) -> T:
    """The value of ``size`` among a scenario's three."""
    return {Size.FULL: full, Size.QUICK: quick, Size.SMOKE: smoke}[size]
