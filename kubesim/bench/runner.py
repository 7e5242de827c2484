"""``kubesim bench``: run the scenarios, print one table, write a JSON file of results.

Each scenario starts its own cluster on free ports (or etcd alone, for the
ceiling) and stops it when done. Scenarios print a progress line as they go.
A failing scenario is reported in the table; it does not stop the others.
Benchmarks print figures; they never pass or fail anything.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from kubesim.bench import api, etcd_ceiling
from kubesim.bench.cluster import cluster
from kubesim.bench.results import ScenarioResult, table, write_json


def _say(text: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", flush=True)


def _etcd(args: argparse.Namespace) -> ScenarioResult:
    with cluster() as c:
        port = int(c.etcd_url.rsplit(":", 1)[1])
        _say("etcd ceiling: guarded transactions straight to etcd")
        return asyncio.run(etcd_ceiling.run(port, quick=args.quick))


def _api(args: argparse.Namespace) -> ScenarioResult:
    with cluster() as c:
        result = asyncio.run(api.run(c.url, quick=args.quick, progress=_say))
        c.sample()
        result.add("APIServer peak RSS", c.peak_rss.get("apiserver"), "bytes")
        return result


SCENARIOS: dict[str, Callable[[argparse.Namespace], ScenarioResult]] = {
    "etcd": _etcd,
    "api": _api,
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke run of every scenario")
    p.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), metavar="NAME",
                   help=f"run only this scenario (repeatable): {', '.join(SCENARIOS)}")
    p.add_argument("--results-dir", type=Path, default=Path("bench/results"),
                   help="where the JSON results go (default bench/results)")


def main(args: argparse.Namespace) -> int:
    names = args.scenario or list(SCENARIOS)
    results: list[ScenarioResult] = []
    for name in names:
        _say(f"scenario {name}")
        started = time.perf_counter()
        try:
            result = SCENARIOS[name](args)
        except Exception as e:  # noqa: BLE001 - a failed scenario is a row in the table, not a crash
            traceback.print_exc(file=sys.stderr)
            result = ScenarioResult(name, error=f"{type(e).__name__}: {e}")
        result.seconds = result.seconds or time.perf_counter() - started
        results.append(result)
    print()
    print(table(results))
    path = write_json(results, args.results_dir, quick=args.quick)
    print(f"\nresults written to {path}")
    return 0
