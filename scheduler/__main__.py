"""``python -m scheduler --master URL [--config FILE]``: kubesim's kube-scheduler.

Flags: ``--config`` (a KubeSchedulerConfiguration file; see
:mod:`scheduler.profile`), ``--plugin-module`` (out-of-tree plugins, see
:mod:`scheduler.outoftree`), ``--seed`` (repeatable runs), ``--decisions-kept``
(``/debug/decisions``, see :mod:`scheduler.decisions`) and the common ones of
:func:`machinery.process.run`: ``--master``, ``--kubeconfig``,
``--health-port`` (``/healthz``, ``/readyz``, ``/metrics``, ``/debug/...``),
``--leader-elect`` (default true, Lease ``kube-system/kube-scheduler``) and
the other leader-election flags.

SIGHUP re-reads ``--config``; the ConfigMap ``kube-system/kubesim-scheduler-config``
overrides it while it exists (see :mod:`scheduler.reload`).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import random
import signal
import sys
from collections.abc import Mapping, Sequence

from machinery.process import Runtime, run
from machinery.process import build_parser as process_build_parser
from scheduler.decisions import DEFAULT_KEPT, DecisionLog
from scheduler.framework.interface import PluginFactory
from scheduler.framework.runtime import FrameworkError
from scheduler.outoftree import PluginModuleError, load_registry
from scheduler.profile import ConfigError, SchedulerConfig, default_config, load_config
from scheduler.reload import ConfigReloader
from scheduler.scheduler import Scheduler, check_profiles

DESCRIPTION = ("kubesim's scheduler: watches unscheduled Pods, filters and scores the nodes with the "
               "profile's plugins, and binds each Pod to the best node (steps 9 to 11 of the flow).")


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, not {value}")
    return value


def _add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default=None, metavar="FILE",
                        help="The path to a KubeSchedulerConfiguration file (profiles, plugins, weights, "
                             "percentageOfNodesToScore), read again on SIGHUP. Default: one default-scheduler "
                             "profile with Kubernetes' default plugins. The ConfigMap "
                             "kube-system/kubesim-scheduler-config (key config.yaml) overrides it while it exists.")
    parser.add_argument("--plugin-module", action="append", default=[], metavar="MODULE",
                        help="A Python module whose PLUGINS mapping (name -> factory) adds out-of-tree plugins "
                             "that profiles may enable (repeatable), e.g. scheduler_plugins.coscheduling.")
    parser.add_argument("--seed", type=int, default=None, metavar="N",
                        help="Seed the scheduler's random choices (ties between equal nodes, preemption's "
                             "starting point) so that the same events give the same placements. Default: random.")
    parser.add_argument("--decisions-kept", type=_non_negative, default=DEFAULT_KEPT, metavar="N",
                        help="How many of the last scheduling decisions keep their full per-node results for "
                             f"/debug/decisions/<namespace>/<pod> (default: {DEFAULT_KEPT}; 0 keeps none).")


def prepare(args: argparse.Namespace) -> tuple[SchedulerConfig, Mapping[str, PluginFactory]]:
    """The configuration and plugin registry the flags name, checked: raises ValueError with the reason."""
    registry = load_registry(args.plugin_module)
    config = load_config(args.config) if args.config else default_config()
    check_profiles(config, registry)
    return config, registry


async def _main(rt: Runtime, *, config: SchedulerConfig, registry: Mapping[str, PluginFactory]) -> None:
    args = rt.args
    rng = random.Random(args.seed) if args.seed is not None else None
    scheduler = Scheduler(client=rt.client, informers=rt.informers, events=rt.events, config=config,
                          is_leading=lambda: rt.is_leading, rng=rng, registry=registry,
                          decisions=DecisionLog(args.decisions_kept))
    reloader = ConfigReloader(scheduler, path=args.config)
    reloader.watch_configmap(rt.informers)
    # The web page shows which Pods wait in which queue (Kubernetes shows only their counts, as metrics).
    rt.debug_handlers["/debug/queue"] = scheduler.queue.keys
    rt.debug_handlers["/debug/decisions"] = scheduler.decisions.index
    rt.debug_handlers["/debug/decisions/{namespace}/{pod}"] = (
        lambda namespace, pod: scheduler.decisions.document(namespace, pod))
    rt.debug_handlers["/debug/config"] = reloader.document
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGHUP, reloader.reload_file)
    try:
        await rt.lead(scheduler.run)
    finally:
        loop.remove_signal_handler(signal.SIGHUP)


def build_parser() -> argparse.ArgumentParser:
    """The scheduler's flags (what docker-compose.yml and kubesim up pass are checked against it)."""
    return process_build_parser("scheduler", description=DESCRIPTION, lease_name="kube-scheduler",
                                add_flags=_add_flags)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config, registry = prepare(args)
    except (ConfigError, FrameworkError, PluginModuleError) as err:
        parser.error(str(err))
    return run("scheduler", functools.partial(_main, config=config, registry=registry), argv=argv,
               description=DESCRIPTION, lease_name="kube-scheduler", add_flags=_add_flags)


if __name__ == "__main__":
    sys.exit(main())
