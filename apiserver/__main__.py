"""``python -m apiserver``: kubesim's kube-apiserver, serving the Kubernetes REST API over a real etcd."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, cast

import uvicorn

from apiserver import httpserver, serving, workers
from apiserver.app import asgi_app
from apiserver.authentication.x509 import with_peer_identity
from apiserver.proxy.connect import UpgradeHandoff
from apiserver.registry.core.service.ipallocator import parse_service_cidrs
from apiserver.registry.core.service.portallocator import parse_port_range
from apiserver.server import APIServer, Settings
from apiserver.settings import SecuritySettings
from apiserver.storage.etcd import hand_over_promptly
from machinery.gctune import freeze_survivors
from machinery.process import duration_arg as _duration
from machinery.process import positive_int_arg, quiet_http_client_logs

#: The only address ``--insecure-port`` listens on.
INSECURE_BIND_ADDRESS = "127.0.0.1"


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "t", "yes"):
        return True
    if text.lower() in ("false", "0", "f", "no"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m apiserver",
        description="kubesim's APIServer: the Kubernetes 1.32 REST and watch API (every built-in group "
                    "Kubernetes serves by default) stored in etcd. Only it talks to etcd.")
    p.add_argument("--etcd-servers", required=True,
                   help="comma-separated etcd client URLs, e.g. http://127.0.0.1:2379")
    p.add_argument("--bind-address", default="127.0.0.1",
                   help="address the secure port listens on (default 127.0.0.1)")
    p.add_argument("--secure-port", type=int, default=6443, help="port to serve HTTPS on (default 6443)")
    p.add_argument("--insecure-port", type=int, default=0, metavar="PORT",
                   help="also serve plain HTTP on 127.0.0.1:PORT, with no authentication or authorization "
                        "(every request is system:masters); for benchmarks and debugging only (default 0: off)")
    p.add_argument("--tls-cert-file", metavar="FILE",
                   help="serving certificate (PEM); without it a self-signed one is made")
    p.add_argument("--tls-private-key-file", metavar="FILE", help="the serving certificate's private key (PEM)")
    p.add_argument("--cert-dir", metavar="DIR",
                   help="where a self-signed serving certificate is kept across restarts (default: not kept)")
    p.add_argument("--client-ca-file", metavar="FILE",
                   help="CA bundle whose client certificates authenticate their CN as user and O as groups")
    p.add_argument("--anonymous-auth", type=_bool, default=True, metavar="BOOL",
                   help="serve requests without credentials as system:anonymous (default true)")
    p.add_argument("--kubelet-client-certificate", metavar="FILE",
                   help="the client certificate the APIServer presents to kubelets (PEM)")
    p.add_argument("--kubelet-client-key", metavar="FILE", help="the key of --kubelet-client-certificate (PEM)")
    p.add_argument("--kubelet-certificate-authority", metavar="FILE",
                   help="CA bundle the kubelets' serving certificates are checked against (default: not checked, "
                        "as kube-apiserver)")
    p.add_argument("--token-auth-file", metavar="FILE",
                   help="static bearer tokens, one per line: token,user,uid,\"group1,group2\"")
    p.add_argument("--service-account-key-file", action="append", default=[], metavar="FILE",
                   help="PEM keys that verify ServiceAccount tokens (repeatable; default: the signing key's)")
    p.add_argument("--service-account-signing-key-file", metavar="FILE",
                   help="PEM private key that signs ServiceAccount tokens (default: one made for this process)")
    p.add_argument("--service-account-issuer", action="append", default=[], metavar="URL",
                   help="issuer of ServiceAccount tokens; the first signs, all are accepted (repeatable; default "
                        "https://kubernetes.default.svc.cluster.local)")
    p.add_argument("--api-audiences", default="", metavar="LIST",
                   help="comma-separated audiences of the API (default: the first issuer)")
    p.add_argument("--service-account-max-token-expiration", type=_duration, default=0.0, metavar="DURATION",
                   help="the longest lifetime of a TokenRequest token (default 0: no limit)")
    p.add_argument("--service-account-extend-token-expiration", type=_bool, default=True, metavar="BOOL",
                   help="give the 3607 s tokens of Pods' kube-api-access volumes a year of validity, warning "
                        "after 3607 s, as Kubernetes' safe transition to bound tokens does (default true)")
    p.add_argument("--authorization-mode", default="Node,RBAC", metavar="MODES",
                   help="comma-separated authorizers, asked in order: Node, RBAC, AlwaysAllow, AlwaysDeny "
                        "(default Node,RBAC)")
    p.add_argument("--audit-policy-file", metavar="FILE", help="an audit.k8s.io/v1 Policy; audit is on with "
                                                                "--audit-log-path")
    p.add_argument("--audit-log-path", metavar="PATH", help="file the audit events are appended to ('-': stdout)")
    p.add_argument("--audit-log-maxage", type=int, default=0, metavar="DAYS",
                   help="days to keep rotated audit logs (default 0: no limit)")
    p.add_argument("--audit-log-maxbackup", type=int, default=0, metavar="N",
                   help="rotated audit logs to keep (default 0: all)")
    p.add_argument("--audit-log-maxsize", type=int, default=0, metavar="MB",
                   help="megabytes an audit log reaches before it is rotated (default 0: 100)")
    p.add_argument("--workers", type=positive_int_arg, default=1, metavar="N",
                   help="run N APIServer processes on these ports (SO_REUSEPORT), each with its own watch "
                        "cache fed by its own etcd watch, as kube-apiserver replicas behind a load balancer "
                        "are, all with one serving certificate and ServiceAccount signing key; this process "
                        "supervises them (kubesim-only; default 1)")
    p.add_argument("--reuse-port", action="store_true",
                   help="bind the ports with SO_REUSEPORT, so that other APIServer processes started with this "
                        "flag share them and the kernel spreads connections over them (kubesim-only; what "
                        "--workers and kubesim up --apiservers use)")
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
    p.add_argument("--max-requests-inflight", type=int, default=400, metavar="N",
                   help="the most non-mutating requests in flight at once; beyond it, 429 with Retry-After, "
                        "except for system:masters (default 400; 0 disables the limit)")
    p.add_argument("--max-mutating-requests-inflight", type=int, default=200, metavar="N",
                   help="the most mutating requests (create, update, patch, delete) in flight at once; beyond "
                        "it, 429 with Retry-After, except for system:masters (default 200; 0 disables the limit)")
    p.add_argument("--request-timeout", type=_duration, default=60.0, metavar="DURATION",
                   help="the longest a request that is not a watch or other stream may take; past it, 504 "
                        "(default 1m0s)")
    p.add_argument("--system-namespaces-interval", type=_duration, default=60.0, metavar="DURATION",
                   help="how often missing system namespaces (default, kube-system, kube-public, "
                        "kube-node-lease) are created again (kubesim-only; default 1m0s)")
    p.add_argument("--request-header-timeout", type=_duration, default=32.0, metavar="DURATION",
                   help="how long a client may take to send a request's headers; past it, 408 and the "
                        "connection closes (kubesim-only; default 32s)")
    p.add_argument("--default-not-ready-toleration-seconds", type=int, default=300, metavar="SECONDS",
                   help="tolerationSeconds of the not-ready toleration added to every Pod without one "
                        "(default 300)")
    p.add_argument("--default-unreachable-toleration-seconds", type=int, default=300, metavar="SECONDS",
                   help="tolerationSeconds of the unreachable toleration added to every Pod without one "
                        "(default 300)")
    p.add_argument("--service-cluster-ip-range", default="10.96.0.0/12", metavar="CIDRS",
                   help="where Services' ClusterIPs come from: a CIDR, or one IPv4 and one IPv6 CIDR separated by a "
                        "comma; at most 2^20 addresses each (default 10.96.0.0/12)")
    p.add_argument("--service-node-port-range", default="30000-32767", metavar="RANGE",
                   help="ports NodePort and LoadBalancer Services get on every node (default 30000-32767)")
    p.add_argument("--advertise-address", default=None, metavar="IP",
                   help="the address the kubernetes Service in default points at (default: --bind-address, or "
                        "127.0.0.1 when that is 0.0.0.0)")
    p.add_argument("--enable-admission-plugins", type=_plugin_names, default=(), metavar="NAMES",
                   help="admission plugins to enable in addition to default-enabled ones (comma-delimited); "
                        "kubesim's plugins are all enabled by default")
    p.add_argument("--disable-admission-plugins", type=_plugin_names, default=(), metavar="NAMES",
                   help="admission plugins that should be disabled although they are in the default enabled "
                        "plugins list (comma-delimited), e.g. ServiceAccount")
    p.add_argument("--no-managed-fields", action="store_true",
                   help="do not record metadata.managedFields on writes (server-side apply still works)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return p


def _plugin_names(text: str) -> tuple[str, ...]:
    from apiserver.admission import PLUGIN_NAMES
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in PLUGIN_NAMES]
    if unknown:
        raise argparse.ArgumentTypeError(f"admission-control plugins {unknown} are not known "
                                         f"(known: {', '.join(PLUGIN_NAMES)})")
    return names


class _Server(serving.Server):
    """uvicorn, but a shutdown first ends every watch stream so that it does not wait for them."""

    api: APIServer | None = None

    def handle_exit(self, sig: int, frame: object) -> None:
        if self.api is not None:
            self.api.stopping.set()
            for cache in self.api.caches.values():
                cache.close_all()
        super().handle_exit(sig, frame)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        parse_service_cidrs(args.service_cluster_ip_range)
        parse_port_range(args.service_node_port_range)
        if bool(args.kubelet_client_certificate) != bool(args.kubelet_client_key):
            raise ValueError("--kubelet-client-certificate and --kubelet-client-key must be given together")
    except ValueError as e:
        parser.error(str(e))
    if args.workers > 1:
        if not workers.needs_shared_secrets(args):
            # Nothing to make, so no directory that a supervisor killed with SIGKILL would leave behind.
            return workers.supervise(argv, args.workers)
        with tempfile.TemporaryDirectory(prefix="kubesim-apiserver-") as shared:
            return workers.supervise([*argv, *workers.shared_secrets(args, Path(shared))], args.workers)
    advertise = args.advertise_address or (args.bind_address if args.bind_address not in ("0.0.0.0", "::")
                                           else "127.0.0.1")
    worker = os.environ.get("KUBESIM_APISERVER_WORKER")
    name = f"apiserver-{worker}" if worker else "apiserver"
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format=f"%(asctime)s {name} %(levelname)s %(message)s")
    quiet_http_client_logs()  # the aggregator's proxy and availability checks to APIService backends
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
        max_requests_inflight=args.max_requests_inflight,
        max_mutating_requests_inflight=args.max_mutating_requests_inflight,
        request_timeout=args.request_timeout,
        system_namespaces_interval=args.system_namespaces_interval,
        service_cluster_ip_range=args.service_cluster_ip_range,
        service_node_port_range=args.service_node_port_range,
        advertise_address=advertise,
        advertise_port=args.secure_port,
        disabled_admission_plugins=tuple(n for n in args.disable_admission_plugins
                                         if n not in args.enable_admission_plugins),
        security=SecuritySettings(
            authorization_modes=tuple(m.strip() for m in args.authorization_mode.split(",") if m.strip()),
            anonymous_auth=args.anonymous_auth, token_auth_file=args.token_auth_file,
            service_account_key_files=tuple(args.service_account_key_file),
            service_account_signing_key_file=args.service_account_signing_key_file,
            service_account_issuers=tuple(args.service_account_issuer),
            api_audiences=tuple(a.strip() for a in args.api_audiences.split(",") if a.strip()),
            service_account_max_token_expiration=args.service_account_max_token_expiration,
            service_account_extend_token_expiration=args.service_account_extend_token_expiration,
            audit_policy_file=args.audit_policy_file, audit_log_path=args.audit_log_path,
            audit_log_maxage=args.audit_log_maxage, audit_log_maxbackup=args.audit_log_maxbackup,
            audit_log_maxsize=args.audit_log_maxsize,
            kubelet_client_certificate=args.kubelet_client_certificate, kubelet_client_key=args.kubelet_client_key,
            kubelet_certificate_authority=args.kubelet_certificate_authority),
    )
    log = logging.getLogger("apiserver")
    try:
        app, api = asgi_app(settings)
        cert, key = serving.serving_files(args.tls_cert_file, args.tls_private_key_file, args.cert_dir,
                                          args.bind_address)
        tls = serving.tls_context(cert, key, args.client_ca_file)
    except (OSError, ValueError) as err:
        log.error("%s", err)
        return 1
    # proxy_headers off: uvicorn would otherwise take the client's address from X-Forwarded-For (kubectl
    # proxy sends one), and the x509 authenticator finds a connection's certificate by its address.
    common: dict[str, Any] = {"loop": "uvloop", "log_level": "warning", "access_log": False,
                              "timeout_graceful_shutdown": 3, "timeout_keep_alive": 60, "backlog": 4096,
                              "proxy_headers": False}
    # Upgrades of exec, attach and portforward leave uvicorn with their raw connection (TLS kept, and the
    # peer's certificate user with it), then go through the same application (authentication,
    # authorization, audit, handlers) with it.
    handoff = httpserver.handoff_protocol_class(UpgradeHandoff(api, app), header_timeout=args.request_header_timeout)
    plain = httpserver.handoff_protocol_class(UpgradeHandoff(api, api.insecure_app),
                                              header_timeout=args.request_header_timeout)
    protocol = with_peer_identity(serving.coalescing_writes(handoff))
    config = uvicorn.Config(app, host=args.bind_address, port=args.secure_port,
                            http=cast(Any, serving.tls_protocol(protocol, tls)), **common)
    extra = []
    if args.insecure_port:
        log.warning("serving plain HTTP on http://%s:%d with no authentication or authorization: every request "
                    "there is system:masters (--insecure-port; never expose it)", INSECURE_BIND_ADDRESS,
                    args.insecure_port)
        insecure = uvicorn.Server(uvicorn.Config(api.insecure_app, host=INSECURE_BIND_ADDRESS,
                                                 port=args.insecure_port, http=plain, lifespan="off", **common))
        # Replicas on one port share the insecure one too.
        extra.append((insecure, [workers.reuse_port_socket(INSECURE_BIND_ADDRESS, args.insecure_port)]
                      if args.reuse_port else None))
    # The watch cache holds every object: keep full collections off it.
    freeze_survivors()
    # etcd's answers come in through gRPC's threads: they must not wait 5 ms for the loop's GIL.
    hand_over_promptly()
    sockets = [workers.reuse_port_socket(args.bind_address, args.secure_port)] if args.reuse_port else None
    server = _Server(config, extra)
    server.api = api
    log.info("serving securely on https://%s:%d, etcd %s", args.bind_address, args.secure_port,
             ",".join(settings.etcd_servers))
    server.run(sockets=sockets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
