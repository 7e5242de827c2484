"""The plots of ``kubesim compare``: PNG and SVG, drawn by matplotlib without a display (Agg).

- ``timeline``: Pods scheduled (solid) and pending (dashed) against trace time, one colour per profile;
- ``allocation``: each node's cpu allocation, fullest first, one bar series per profile;
- ``latency``: the cumulative distribution of scheduling latency;

each with a legend naming the profiles.

Synchronous; called once a comparison is done. Each figure is closed after it is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

# SVG text stays text (searchable, editable), not outlines.
plt.rcParams["svg.fonttype"] = "none"

_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red")


def _save(figure: Any, directory: Path, name: str) -> list[Path]:
    for axes in figure.axes:
        if axes.get_legend_handles_labels()[0]:
            axes.legend(fontsize="small")
    figure.tight_layout()
    paths = []
    for suffix in ("png", "svg"):
        path = directory / f"{name}.{suffix}"
        figure.savefig(path, dpi=110)
        paths.append(path)
    plt.close(figure)
    return paths


def draw(runs: Sequence[dict[str, Any]], directory: Path) -> list[Path]:
    """Every plot of the comparison (``runs`` as in the JSON report); the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    figure, axes = plt.subplots(figsize=(8, 4))
    for run, colour in zip(runs, _COLOURS, strict=False):
        times = [s["t"] for s in run["timeline"]]
        axes.step(times, [s["scheduled"] for s in run["timeline"]], where="post", color=colour,
                  label=f"{run['name']}: scheduled")
        axes.step(times, [s["pending"] for s in run["timeline"]], where="post", color=colour, linestyle="--",
                  label=f"{run['name']}: pending")
    axes.set(xlabel="trace time (s)", ylabel="Pods", title="Pods scheduled and pending")
    written += _save(figure, directory, "timeline")

    figure, axes = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(1, len(runs))
    for i, (run, colour) in enumerate(zip(runs, _COLOURS, strict=False)):
        shares = sorted(run["allocation"]["cpu"]["perNode"].values(), reverse=True)
        axes.bar([x + i * width for x in range(len(shares))], [100 * s for s in shares], width=width,
                 color=colour, label=run["name"])
    axes.set(xlabel="nodes, fullest first", ylabel="cpu requested (% of allocatable)",
             title="Per-node cpu allocation")
    written += _save(figure, directory, "allocation")

    figure, axes = plt.subplots(figsize=(8, 4))
    for run, colour in zip(runs, _COLOURS, strict=False):
        latencies = sorted(run["latency"]["all"])
        if latencies:
            axes.step(latencies, [(i + 1) / len(latencies) for i in range(len(latencies))], where="post",
                      color=colour, label=run["name"])
    axes.set(xlabel="scheduling latency (s)", ylabel="share of Pods", title="Scheduling latency (CDF)")
    written += _save(figure, directory, "latency")
    return written
