"""Process scaffolding: the one ``run()`` behind every component's ``__main__``.

A component supplies its name and an async ``main(runtime)``; ``run`` does the
rest, the same way for all of them:

- flags: ``--master``, ``--kubeconfig``, ``--health-port``, ``--log-level``,
  ``-v``, and for components that elect a leader ``--leader-elect`` (default
  true), ``--leader-elect-lease-duration`` (15s), ``--leader-elect-renew-deadline``
  (10s), ``--leader-elect-retry-period`` (2s), ``--leader-elect-resource-name``
  and ``--leader-elect-resource-namespace``, with Kubernetes' names, defaults
  and value syntax (``--leader-elect=false``, ``--leader-elect-lease-duration=15s``);
- logging, one line per event: ``<time> <component> [step N] message``, where
  the step is the flow step a caller names with ``extra={"step": N}``;
- ``/healthz``, ``/livez``, ``/readyz`` and ``/metrics`` (prometheus-client's
  exposition of the default registry) on 127.0.0.1, by a tiny asyncio HTTP server,
  plus the JSON ``/debug/...`` paths a component registers in
  :attr:`Runtime.debug_handlers` (path segments written ``{name}`` are parameters:
  the scheduler's queues, and its ``/debug/decisions/{namespace}/{pod}``);
- one :class:`~machinery.client.Client`, one
  :class:`~machinery.informer.InformerFactory` and one
  :class:`~machinery.events.EventBroadcaster` for the process, handed to
  ``main`` in the :class:`Runtime`;
- SIGTERM and SIGINT cancel ``main`` (which stops its workers and, through
  :meth:`Runtime.lead`, releases the leader Lease), then pending Events are
  flushed, watches closed and the process exits 0. A second signal exits at once.

Exit codes: 0 after a signal or when ``main`` returns; 1 when ``main`` fails or
the leader Lease is lost (as Kubernetes' components, which exit and are
restarted); 2 for bad flags or connection settings.

Concurrency: everything runs on one event loop. ``run`` owns four tasks (main,
informers, event writers, health server) and stops them in that order.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from machinery.api.duration import parse_duration
from machinery.client.config import ClientConfig, ConfigError, config_from_flags
from machinery.client.objects import strip_managed_fields
from machinery.client.rest import Client
from machinery.events import EventBroadcaster
from machinery.gctune import freeze_survivors
from machinery.informer.shared import InformerFactory
from machinery.leaderelection import LeaderElectionConfig, LeaderElector, LeadershipLost, default_identity

LOOPBACK = "127.0.0.1"

Main = Callable[["Runtime"], Coroutine[Any, Any, None]]
Work = Callable[[], Coroutine[Any, Any, None]]

log = logging.getLogger("machinery.process")


class Runtime:
    """What ``main`` gets: parsed flags, the shared client, informers and events, and leadership."""

    def __init__(self, component: str, args: argparse.Namespace, client: Client,
                 election: LeaderElectionConfig | None) -> None:
        self.component = component
        self.args = args
        self.client = client
        # As kube-controller-manager's and kube-scheduler's informers do: nothing of a component reads
        # managedFields, and a fifth of a Pod's memory (and of its decoding) is spent on them.
        self.informers = InformerFactory(client, transform=strip_managed_fields)
        self.events = EventBroadcaster(client)
        self.identity = election.identity if election is not None else default_identity()
        #: The port /healthz, /readyz and /metrics are served on (known once ``main`` runs).
        self.health_port = 0
        self._election = election
        self._elector: LeaderElector | None = None
        self._readiness: dict[str, Callable[[], bool]] = {"informer-sync": lambda: self.informers.has_synced}
        #: ``/debug/...`` paths of the health port. A handler returns a JSON-ready value (None: 404) and
        #: takes the path's ``{name}`` segments as keyword arguments.
        self.debug_handlers: dict[str, Callable[..., object]] = {}

    def add_readiness_check(self, name: str, check: Callable[[], bool]) -> None:
        """``/readyz`` answers 200 only when every check returns True."""
        self._readiness[name] = check

    async def lead(self, work: Work) -> None:
        """Run ``work()`` while holding the component's leader Lease (or at once with ``--leader-elect=false``).

        Raises :class:`~machinery.leaderelection.LeadershipLost` when the Lease is
        lost; the work has then been cancelled and ``run`` exits 1.
        """
        if self._election is None:
            await work()
            return
        self._elector = LeaderElector(self.client, self._election, recorder=self.events.recorder(self.component))
        await self._elector.run(work)

    @property
    def is_leading(self) -> bool:
        """Whether leader-only work may act now (always, without leader election).

        Work that writes should check it before each write: after a pause longer
        than the renew deadline it is False before the work is even cancelled.
        """
        if self._election is None:
            return True
        return self._elector is not None and self._elector.is_leading

    def failing_readiness_checks(self) -> list[str]:
        return [name for name, check in self._readiness.items() if not check()]


def build_parser(component: str, *, description: str = "", lease_name: str | None = None,
                 add_flags: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.ArgumentParser:
    """The component's flag parser: the common flags, the leader-election ones if it elects, and its own."""
    # `python -m controller_manager`, as the user typed it (not the component's name).
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    module = main_spec.parent if main_spec is not None and main_spec.parent else component
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    parser.add_argument("--master", metavar="URL",
                        help="The address of the APIServer (overrides any value in --kubeconfig).")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="Path to a kubeconfig file with the APIServer's address and credentials.")
    parser.add_argument("--health-port", type=port_arg, default=0, metavar="PORT",
                        help="Port for /healthz, /readyz and /metrics on 127.0.0.1 (0: pick a free one "
                             "and log it).")
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info",
                        help="Least severe level logged (default: info).")
    parser.add_argument("-v", "--v", type=int, default=0, metavar="N",
                        help="Log verbosity, as klog's: 4 or more logs debug messages.")
    if lease_name is not None:
        parser.add_argument("--leader-elect", type=bool_arg, nargs="?", const=True, default=True,
                            metavar="BOOL", help="Start a leader election client and gain leadership "
                                                 "before executing the main loop (default: true).")
        parser.add_argument("--leader-elect-lease-duration", type=duration_arg, default=15.0, metavar="DURATION",
                            help="How long non-leader candidates wait after observing a leadership renewal "
                                 "before trying to acquire leadership (default: 15s).")
        parser.add_argument("--leader-elect-renew-deadline", type=duration_arg, default=10.0, metavar="DURATION",
                            help="How long the leader keeps trying to renew before it stops leading "
                                 "(default: 10s).")
        parser.add_argument("--leader-elect-retry-period", type=duration_arg, default=2.0, metavar="DURATION",
                            help="How long clients wait between attempts to acquire and renew "
                                 "leadership (default: 2s).")
        parser.add_argument("--leader-elect-resource-name", default=lease_name, metavar="NAME",
                            help=f"The name of the Lease used for leader election (default: {lease_name}).")
        parser.add_argument("--leader-elect-resource-namespace", default="kube-system", metavar="NAMESPACE",
                            help="The namespace of the Lease used for leader election (default: kube-system).")
    if add_flags is not None:
        add_flags(parser)
    return parser


def run(component: str, main: Main, *, argv: Sequence[str] | None = None, description: str = "",
        lease_name: str | None = None,
        add_flags: Callable[[argparse.ArgumentParser], None] | None = None) -> int:
    """Parse flags, set up logging, run ``main`` until it returns or a signal arrives; the exit code.

    ``lease_name`` (``"kube-scheduler"``...) makes the component elect a leader:
    ``main`` then wraps its leader-only work in :meth:`Runtime.lead`.
    """
    parser = build_parser(component, description=description, lease_name=lease_name, add_flags=add_flags)
    args = parser.parse_args(argv)
    setup_logging(component, "debug" if args.v >= 4 else args.log_level)
    try:
        config = config_from_flags(args.master, args.kubeconfig)
        election = _election_config(args) if lease_name is not None else None
    except (ConfigError, ValueError) as err:
        parser.error(str(err))
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        return runner.run(_serve(component, main, args, config, election))


def setup_logging(component: str, level: str) -> None:
    """One line per record on stderr: ``<time> <component> [step N] message``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter(component))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    quiet_http_client_logs()


def quiet_http_client_logs() -> None:
    """httpx logs every request at INFO: far too much for a process making thousands a second."""
    level = max(logging.WARNING, logging.getLogger().level)
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(level)


class _Formatter(logging.Formatter):
    def __init__(self, component: str) -> None:
        super().__init__()
        self._component = component

    def format(self, record: logging.LogRecord) -> str:
        when = dt.datetime.fromtimestamp(record.created, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        step = getattr(record, "step", None)
        prefix = f"{when} {self._component}" + (f" [step {step}]" if step is not None else "")
        message = record.getMessage()
        if record.levelno >= logging.WARNING:
            message = f"{record.levelname.lower()}: {message}"
        line = f"{prefix} {message}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


async def _serve(component: str, main: Main, args: argparse.Namespace, config: ClientConfig,
                 election: LeaderElectionConfig | None) -> int:
    loop = asyncio.get_running_loop()
    # Informer caches grow to tens of thousands of objects: keep full collections off them.
    freeze_survivors()
    async with Client(config, user_agent=f"kubesim-{component}") as client:
        runtime = Runtime(component, args, client, election)
        health = await asyncio.start_server(lambda r, w: _serve_health(runtime, r, w), LOOPBACK, args.health_port)
        runtime.health_port = health.sockets[0].getsockname()[1]
        log.info("serving /healthz, /readyz and /metrics on http://%s:%d", LOOPBACK, runtime.health_port)
        main_task = asyncio.create_task(main(runtime), name=f"{component}-main")
        informers_task = asyncio.create_task(runtime.informers.run(), name=f"{component}-informers")
        events_task = asyncio.create_task(runtime.events.run(), name=f"{component}-events")
        signalled: list[str] = []

        def on_signal(sig: signal.Signals) -> None:
            if signalled:
                log.warning("received %s again, exiting at once", sig.name)
                os._exit(1)
            signalled.append(sig.name)
            log.info("received %s, shutting down", sig.name)
            main_task.cancel()

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal, sig)
        try:
            await asyncio.wait({main_task, informers_task, events_task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            # Stop the work first (workers drain, the Lease is released), then flush Events, then
            # close the watches; the health server answers until the end.
            for task in (main_task, events_task, informers_task):
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            health.close()
            await health.wait_closed()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
        code = _exit_code(main_task, bool(signalled))
        for task in (informers_task, events_task):
            if not task.cancelled() and task.exception() is not None:
                log.error("%s failed", task.get_name(), exc_info=task.exception())
                code = 1
        log.info("exiting with code %d", code)
        return code


def _exit_code(main_task: asyncio.Task[None], signalled: bool) -> int:
    if main_task.cancelled():
        return 0 if signalled else 1
    err = main_task.exception()
    if err is None:
        return 0
    if isinstance(err, LeadershipLost):
        log.error("%s", err)
    else:
        log.error("main failed", exc_info=err)
    return 1


async def _serve_health(runtime: Runtime, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        async with asyncio.timeout(5):
            request = await reader.readline()
            while (await reader.readline()).strip():
                pass
        parts = request.decode("latin-1").split()
        path = parts[1].split("?")[0] if len(parts) >= 2 else ""
        content_type = "text/plain; charset=utf-8"
        if path in ("/healthz", "/livez"):
            status, body = "200 OK", b"ok"
        elif path == "/readyz":
            failing = runtime.failing_readiness_checks()
            status, body = (("503 Service Unavailable", f"readyz check failed: {', '.join(failing)}".encode())
                            if failing else ("200 OK", b"ok"))
        elif path == "/metrics":
            status, body, content_type = "200 OK", generate_latest(), CONTENT_TYPE_LATEST
        elif (found := match_debug_path(runtime.debug_handlers, path)) is not None:
            status, body, content_type = _debug_answer(*found)
        else:
            status, body = "404 Not Found", b"404 page not found"
        writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                     f"Connection: close\r\n\r\n".encode() + body)
        await writer.drain()
    except (TimeoutError, ConnectionError):
        pass
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def match_debug_path(handlers: Mapping[str, Callable[..., object]], path: str
                     ) -> tuple[Callable[..., object], dict[str, str]] | None:
    """The handler of ``path`` and its parameters: an exact path first, then ``{name}`` patterns."""
    handler = handlers.get(path)
    if handler is not None:
        return handler, {}
    segments = path.strip("/").split("/")
    for pattern, candidate in handlers.items():
        parts = pattern.strip("/").split("/")
        if len(parts) != len(segments):
            continue
        params: dict[str, str] = {}
        for part, segment in zip(parts, segments, strict=True):
            if part.startswith("{") and part.endswith("}") and segment:
                params[part[1:-1]] = unquote(segment)
            elif part != segment:
                break
        else:
            return candidate, params
    return None


def _debug_answer(handler: Callable[..., object], params: dict[str, str]) -> tuple[str, bytes, str]:
    try:
        value = handler(**params)
    except Exception as err:
        log.exception("debug handler failed")
        return "500 Internal Server Error", f"debug handler failed: {err}".encode(), "text/plain; charset=utf-8"
    if value is None:
        return "404 Not Found", b"404 page not found", "text/plain; charset=utf-8"
    return "200 OK", orjson.dumps(value), "application/json"


def _election_config(args: argparse.Namespace) -> LeaderElectionConfig | None:
    if not args.leader_elect:
        return None
    return LeaderElectionConfig(
        name=args.leader_elect_resource_name, namespace=args.leader_elect_resource_namespace,
        identity=default_identity(), lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline, retry_period=args.leader_elect_retry_period)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop when installed (it comes with uvicorn[standard]): markedly faster sockets."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - installed with the project
        return None
    return uvloop.new_event_loop


def duration_arg(text: str) -> float:
    """An argparse type for Go durations (``40s``, ``5m``, or seconds)."""
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def positive_duration_arg(text: str) -> float:
    """An argparse type for a Go duration greater than zero."""
    seconds = duration_arg(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return seconds


def positive_int_arg(text: str) -> int:
    """An argparse type for an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def non_negative_int_arg(text: str) -> int:
    """An argparse type for an integer of at least 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, not {value}")
    return value


def bool_arg(text: str) -> bool:
    """Go's ``strconv.ParseBool``."""
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise argparse.ArgumentTypeError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def port_arg(text: str) -> int:
    """An argparse type for TCP ports (0 allowed: pick a free one)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is out of range 0-65535")
    return port
