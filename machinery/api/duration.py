"""Go-style durations (``300ms``, ``40s``, ``5m``, ``1h30m``) for command-line flags.

Kubernetes components take durations in Go's ``time.ParseDuration`` syntax;
kubesim's take the same, and also a bare number of seconds.
"""

from __future__ import annotations

import re
from typing import Final

_UNITS: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in ``text``; raises ValueError with Go's wording for bad input."""
    s = text.strip()
    if not s:
        raise ValueError(f'time: invalid duration "{text}"')
    try:
        return float(s)
    except ValueError:
        pass
    sign = -1.0 if s.startswith("-") else 1.0
    s = s.lstrip("+-")
    total, pos = 0.0, 0
    for m in _PART.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or pos == 0:
        raise ValueError(f'time: invalid duration "{text}"')
    return sign * total


def format_duration(seconds: float) -> str:
    """Go's String() form for whole seconds: ``40s``, ``5m0s``, ``1h0m0s``."""
    total = int(seconds)
    h, rem = divmod(total, 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h}h{m}m{s}s"
    if m:
        return f"{m}m{s}s"
    return f"{s}s"
