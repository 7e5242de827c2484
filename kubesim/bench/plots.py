"""The pictures of a ``kubesim bench`` run: one per scenario, as PNG and SVG beside the JSON results.

People would rather look at a curve than read a table of percentiles, so each
scenario that recorded them gets, side by side:

- its progress over time (Pods created, bound, Running, deleted: each curve a
  cumulative count against seconds since its phase began);
- its latency distributions (startup latencies, as a CDF);
- its CPU per Pod, per process, beside etcd's.

Drawn with matplotlib (its non-interactive Agg backend, nothing shown on a
screen); a scenario without any of these gets no picture.
"""

from __future__ import annotations

import re
from pathlib import Path

from kubesim.bench.results import ScenarioResult


def _cpu_per_pod(result: ScenarioResult) -> dict[str, float]:
    out = {}
    for f in result.figures:
        match = re.fullmatch(r"(.*) CPU per Pod", f.name)
        if match and f.value is not None and not match.group(1).startswith(("control-plane", "apiserver ")) \
                and "(to bound)" not in match.group(1):
            out[match.group(1)] = f.value * 1000
    return out


def plot(result: ScenarioResult, directory: Path, stem: str) -> list[Path]:
    """Draw ``result``'s picture into ``directory/<stem>-<scenario>.png`` and ``.svg``; the paths written."""
    cpu = _cpu_per_pod(result)
    panels = [p for p in ("series", "samples", "cpu") if (p == "cpu" and cpu) or getattr(result, p, None)]
    if not panels or result.error:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        if panel == "series":
            for name, points in result.series.items():
                ax.plot([t for t, _ in points], [v for _, v in points], label=name)
            ax.set_xlabel("seconds since the phase began")
            ax.set_ylabel("Pods")
            ax.set_title("progress")
            ax.legend(fontsize="small")
        elif panel == "samples":
            for name, values in result.samples.items():
                ordered = sorted(values)
                if ordered:
                    ax.plot(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], label=name)
            ax.set_xlabel("seconds")
            ax.set_ylabel("fraction of samples")
            ax.set_title("latency (CDF)")
            ax.legend(fontsize="small")
        else:
            names = sorted(cpu, key=lambda n: (n == "etcd", n))
            ax.barh(names, [cpu[n] for n in names], color=["#a1261b" if n == "etcd" else "#3b6ea5" for n in names])
            ax.set_xlabel("CPU milliseconds per Pod")
            ax.set_title("CPU per Pod, by process")
    fig.suptitle(result.scenario)
    fig.tight_layout()
    slug = re.sub(r"[^a-z0-9]+", "-", result.scenario.lower()).strip("-")
    written = []
    for suffix in ("png", "svg"):
        path = directory / f"{stem}-{slug}.{suffix}"
        fig.savefig(path, dpi=110)
        written.append(path)
    plt.close(fig)
    return written
