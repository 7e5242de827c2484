"""``python -m apiserver``: kubesim's kube-apiserver, serving the Kubernetes REST API over a real etcd."""

from __future__ import annotations

import argparse
import logging
import sys

import uvicorn

from apiserver.app import asgi_app
from apiserver.server import APIServer, Settings
from machinery.gctune import freeze_survivors
from machinery.process import duration_arg as _duration


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m apiserver",
        description="kubesim's APIServer: the Kubernetes REST and watch API (core/v1 and "
                    "coordination.k8s.io/v1) stored in etcd. Only it talks to etcd.")
    p.add_argument("--etcd-servers", required=True,
                   help="comma-separated etcd client URLs, e.g. http://127.0.0.1:2379")
    p.add_argument("--bind-address", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port to serve HTTP on (default 8080)")
    p.add_argument("--etcd-compaction-interval", type=_duration, default=300.0, metavar="DURATION",
                   help="how often to compact etcd history, as kube-apiserver does (default 5m; 0 disables)")
    p.add_argument("--etcd-request-timeout", type=_duration, default=5.0, metavar="DURATION",
                   help="deadline of each etcd request; past it the client gets 504 (default 5s)")
    p.add_argument("--watch-cache-size", type=int, default=10_000,
                   help="events kept per resource for watches to resume from (default 10000)")
    p.add_argument("--watch-queue-size", type=int, default=10_000,
                   help="events queued for one watcher before it is ended with 410 (default 10000)")
    p.add_argument("--watch-bookmark-interval", type=_duration, default=30.0, metavar="DURATION",
                   help="how often watchers that allow bookmarks get one (default 30s)")
    p.add_argument("--event-ttl", type=_duration, default=3600.0, metavar="DURATION",
                   help="how long Events are kept (default 1h)")
    p.add_argument("--min-request-timeout", type=int, default=1800,
                   help="a watch without timeoutSeconds lasts between this and twice this, in seconds "
                        "(default 1800)")
    p.add_argument("--max-request-bytes", type=int, default=3 * 1024 * 1024,
                   help="largest request body accepted; larger ones get 413 (default 3145728)")
    p.add_argument("--default-not-ready-toleration-seconds", type=int, default=300, metavar="SECONDS",
                   help="tolerationSeconds of the not-ready toleration added to every Pod without one "
                        "(default 300)")
    p.add_argument("--default-unreachable-toleration-seconds", type=int, default=300, metavar="SECONDS",
                   help="tolerationSeconds of the unreachable toleration added to every Pod without one "
                        "(default 300)")
    p.add_argument("--no-managed-fields", action="store_true",
                   help="do not record metadata.managedFields on writes (server-side apply still works)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return p


class _Server(uvicorn.Server):
    """uvicorn, but a shutdown first ends every watch stream so that it does not wait for them."""

    api: APIServer | None = None

    def handle_exit(self, sig: int, frame: object) -> None:
        if self.api is not None:
            self.api.stopping.set()
            for cache in self.api.caches.values():
                cache.close_all()
        super().handle_exit(sig, frame)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s apiserver %(levelname)s %(message)s")
    settings = Settings(
        etcd_servers=[s.strip() for s in args.etcd_servers.split(",") if s.strip()],
        etcd_request_timeout=args.etcd_request_timeout,
        compaction_interval=args.etcd_compaction_interval,
        watch_cache_size=args.watch_cache_size,
        watcher_queue_size=args.watch_queue_size,
        bookmark_interval=args.watch_bookmark_interval,
        event_ttl=int(args.event_ttl),
        max_body_bytes=args.max_request_bytes,
        min_request_timeout=args.min_request_timeout,
        track_managed_fields=not args.no_managed_fields,
        default_not_ready_toleration_seconds=args.default_not_ready_toleration_seconds,
        default_unreachable_toleration_seconds=args.default_unreachable_toleration_seconds,
    )
    app, api = asgi_app(settings)
    config = uvicorn.Config(app, host=args.bind_address, port=args.port, loop="uvloop", http="httptools",
                            log_level="warning", access_log=False, timeout_graceful_shutdown=3,
                            timeout_keep_alive=60, backlog=4096)
    # The watch cache holds every object: keep full collections off it.
    freeze_survivors()
    server = _Server(config)
    server.api = api
    logging.getLogger("apiserver").info("serving on http://%s:%d, etcd %s", args.bind_address, args.port,
                                        ",".join(settings.etcd_servers))
    server.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
