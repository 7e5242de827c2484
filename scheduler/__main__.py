"""``python -m scheduler --master URL [--config FILE]``: kubesim's kube-scheduler.

Flags: ``--config`` (a KubeSchedulerConfiguration file; see
:mod:`scheduler.profile`) and the common ones of
:func:`machinery.process.run`: ``--master``, ``--kubeconfig``,
``--health-port`` (``/healthz``, ``/readyz``, ``/metrics``), ``--leader-elect``
(default true, Lease ``kube-system/kube-scheduler``) and the other
leader-election flags.
"""

from __future__ import annotations

import argparse
import sys

from machinery.process import Runtime, run
from machinery.process import build_parser as process_build_parser
from scheduler.framework.runtime import FrameworkError
from scheduler.profile import ConfigError, SchedulerConfig, default_config, load_config
from scheduler.scheduler import Scheduler, check_profiles

DESCRIPTION = ("kubesim's scheduler: watches unscheduled Pods, filters and scores the nodes with the "
               "profile's plugins, and binds each Pod to the best node (steps 9 to 11 of the flow).")


def _config(path: str) -> SchedulerConfig:
    try:
        config = load_config(path)
        check_profiles(config)
    except (ConfigError, FrameworkError) as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return config


def _add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=_config, default=None, metavar="FILE",
                        help="The path to a KubeSchedulerConfiguration file (profiles, plugins, weights, "
                             "percentageOfNodesToScore). Default: one default-scheduler profile with "
                             "Kubernetes' default plugins.")


async def _main(rt: Runtime) -> None:
    scheduler = Scheduler(client=rt.client, informers=rt.informers, events=rt.events,
                          config=rt.args.config or default_config(), is_leading=lambda: rt.is_leading)
    await rt.lead(scheduler.run)


def build_parser() -> argparse.ArgumentParser:
    """The scheduler's flags (what docker-compose.yml and kubesim up pass are checked against it)."""
    return process_build_parser("scheduler", description=DESCRIPTION, lease_name="kube-scheduler",
                                add_flags=_add_flags)


def main(argv: list[str] | None = None) -> int:
    return run("scheduler", _main, argv=argv, description=DESCRIPTION, lease_name="kube-scheduler",
               add_flags=_add_flags)


if __name__ == "__main__":
    sys.exit(main())
