"""``python -m metrics_server``: node and Pod resource metrics for ``kubectl top`` and autoscalers.

Runs as Kubernetes' metrics-server does (see :mod:`metrics_server`): Node and
Pod informers, a scrape of every kubelet each ``--metric-resolution``, and
``metrics.k8s.io/v1beta1`` on ``--port``, for the APIServer's aggregation
layer to forward to (``--register-apiservice``, which ``kubesim up`` and
docker-compose.yml pass, writes the APIService and the Service it names:
:mod:`metrics_server.register`).

Concurrency: everything on the event loop of :func:`machinery.process.run`:
the informers, the scrape loop and the API server, stopped together.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import ssl
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, cast

import httpx
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from machinery import process
from machinery.api.kinds import NODES, PODS, ObjectKey, ResourceInfo
from machinery.client import Client
from machinery.client.config import ClientConfig, TLSConfig, config_from_flags, load_kubeconfig
from machinery.client.transport import ConnectionPool, LeanTransport
from machinery.informer import Store
from metrics_server import register
from metrics_server.api import LabelsOf, MetricsAPI
from metrics_server.scraper import Scraper, Target, node_target
from metrics_server.storage import Storage

COMPONENT: Final = "metrics_server"
DESCRIPTION: Final = ("metrics-server: scrapes every kubelet's /metrics/resource and serves metrics.k8s.io/v1beta1 "
                      "NodeMetrics and PodMetrics (kubectl top, autoscaling).")
ADDRESS_TYPES: Final = ("Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP")

log = logging.getLogger("metrics_server")


class _View(BaseModel):
    model_config = ConfigDict(extra="ignore", alias_generator=to_camel, populate_by_name=True)


class _Meta(_View):
    name: str = ""
    namespace: str | None = None
    labels: dict[str, str] | None = None


class _Address(_View):
    type: str = ""
    address: str = ""


class _Endpoint(_View):
    port: int = Field(default=0, alias="Port")


class _Endpoints(_View):
    kubelet_endpoint: _Endpoint | None = None


class _NodeStatus(_View):
    addresses: list[_Address] | None = None
    daemon_endpoints: _Endpoints | None = None


class NodeView(_View):
    metadata: _Meta = _Meta()
    status: _NodeStatus = _NodeStatus()


class PodView(_View):
    metadata: _Meta = _Meta()


# The resource table's Nodes and Pods, decoded into these views (same URLs).
NODE_VIEWS: Final = cast("ResourceInfo[NodeView]", dataclasses.replace(cast("ResourceInfo[Any]", NODES),
                                                                        model_ref=NodeView))
POD_VIEWS: Final = cast("ResourceInfo[PodView]", dataclasses.replace(cast("ResourceInfo[Any]", PODS),
                                                                      model_ref=PodView))


def _address_types(text: str) -> list[str]:
    types = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in types if t not in ADDRESS_TYPES]
    if not types or unknown:
        raise argparse.ArgumentTypeError(f"unknown address types {unknown or text!r}: use {', '.join(ADDRESS_TYPES)}")
    return types


def add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=process.port_arg, default=0, metavar="PORT",
                        help="Port of the metrics.k8s.io API (0: a free one, logged) (default: 0).")
    parser.add_argument("--bind-address", default="127.0.0.1", metavar="ADDRESS",
                        help="Address the metrics API listens on (default: 127.0.0.1; 0.0.0.0 in a container).")
    parser.add_argument("--metric-resolution", type=process.positive_duration_arg, default=15.0, metavar="DURATION",
                        help="How often every kubelet is scraped (default: 15s).")
    parser.add_argument("--kubelet-request-timeout", type=process.positive_duration_arg, default=10.0,
                        metavar="DURATION", help="How long one kubelet may take to answer (default: 10s).")
    parser.add_argument("--kubelet-request-concurrency", type=process.positive_int_arg, default=200, metavar="N",
                        help="Kubelets scraped at once (default: 200).")
    parser.add_argument("--kubelet-preferred-address-types", type=_address_types,
                        default=["InternalIP", "ExternalIP", "Hostname"], metavar="TYPES",
                        help="The node address types to reach kubelets at, in order "
                             "(default: InternalIP,ExternalIP,Hostname).")
    parser.add_argument("--kubelet-certificate-authority", metavar="FILE", default=None,
                        help="CA bundle the kubelets' serving certificates are checked against (default: the "
                             "kubeconfig's CA).")
    parser.add_argument("--kubelet-insecure-tls", action="store_true",
                        help="Do not check the kubelets' serving certificates (kubelets serve self-signed ones "
                             "by default, as kubeadm's do).")
    parser.add_argument("--register-apiservice", action="store_true",
                        help="kubesim-only: at start, write the kube-system/metrics-server Service (ExternalName "
                             "--advertise-address) and the v1beta1.metrics.k8s.io APIService on the port served, "
                             "as metrics-server's manifest does in Kubernetes.")
    parser.add_argument("--register-kubeconfig", metavar="FILE", default=None,
                        help="kubesim-only: the credentials --register-apiservice writes the manifest's objects "
                             "(RBAC, Service, APIService) with, as an admin applies metrics-server's manifest "
                             "(default: --kubeconfig's).")
    parser.add_argument("--advertise-address", default="", metavar="HOST",
                        help="The host name or IP the APIServer reaches the metrics API at, for "
                             "--register-apiservice (default: localhost when --bind-address is loopback, this "
                             "host's name when it is 0.0.0.0, else --bind-address).")


def build_parser() -> argparse.ArgumentParser:
    return process.build_parser(COMPONENT, description=DESCRIPTION, add_flags=add_flags)


def main(argv: Sequence[str] | None = None) -> int:
    return process.run(COMPONENT, run, argv=argv, description=DESCRIPTION, add_flags=add_flags)


async def _register(rt: process.Runtime, address: str, port: int) -> None:
    """The manifest's objects, written as ``--register-kubeconfig``'s user (else as metrics-server), to the
    APIServer metrics-server itself talks to."""
    if rt.args.register_kubeconfig is None:
        await register.register(rt.client, address, port)
        return
    own = config_from_flags(rt.args.master, rt.args.kubeconfig)
    config = load_kubeconfig(rt.args.register_kubeconfig).with_server(own.server)
    async with Client(config, user_agent="kubesim-metrics-server-register") as client:
        await register.register(client, address, port)


def kubelet_tls(config: ClientConfig, args: argparse.Namespace) -> ssl.SSLContext:
    """How kubelets are reached, as metrics-server's kubelet client config: the kubeconfig's credentials (its client
    certificate, or its token, sent as a header), checking the kubelets against ``--kubelet-certificate-authority``,
    else the kubeconfig's CA, unless ``--kubelet-insecure-tls``."""
    ca = Path(args.kubelet_certificate_authority).read_bytes() if args.kubelet_certificate_authority else config.tls.ca
    tls = TLSConfig(ca=ca, cert=config.tls.cert, key=config.tls.key, insecure=args.kubelet_insecure_tls)
    ctx = ClientConfig("https://kubelet", tls=tls).ssl_context()
    assert ctx is not None
    return ctx


def targets_of(nodes: Sequence[NodeView], preferred: Sequence[str]) -> list[Target]:
    found = []
    for node in nodes:
        endpoints = node.status.daemon_endpoints
        port = endpoints.kubelet_endpoint.port if endpoints and endpoints.kubelet_endpoint else None
        target = node_target(node.metadata.name, [(a.type, a.address) for a in node.status.addresses or ()], port,
                             preferred)
        if target is not None:
            found.append(target)
    return found


async def run(rt: process.Runtime) -> None:
    args = rt.args
    node_informer = rt.informers.informer(NODE_VIEWS)
    pod_informer = rt.informers.informer(POD_VIEWS)
    storage = Storage()
    scraper_http = httpx.AsyncClient(transport=LeanTransport(ConnectionPool(
        max_connections=args.kubelet_request_concurrency, ssl_context=kubelet_tls(rt.client.config, args))),
        timeout=args.kubelet_request_timeout,
        headers={"Authorization": f"Bearer {rt.client.config.token}"} if rt.client.config.token else None)

    def labels(store: Store[NodeView] | Store[PodView]) -> LabelsOf:
        def lookup(key: str) -> Mapping[str, str] | None:
            obj = store.get(ObjectKey(key))
            return (obj.metadata.labels or {}) if obj is not None else None
        return lookup

    scraper = Scraper(scraper_http, storage, resolution=args.metric_resolution, timeout=args.kubelet_request_timeout,
                      concurrency=args.kubelet_request_concurrency)
    api = MetricsAPI(storage, node_labels=labels(node_informer.store), pod_labels=labels(pod_informer.store),
                     ready=lambda: scraper.cycles > 0)
    rt.add_readiness_check("metric-storage-ready", lambda: scraper.cycles > 0)
    port = await api.start(args.bind_address, args.port)
    log.info("metrics.k8s.io/v1beta1 on port %d; scraping kubelets every %gs", port, args.metric_resolution)
    registration: asyncio.Task[None] | None = None
    if args.register_apiservice:
        address = args.advertise_address or register.advertise_address(args.bind_address)
        registration = asyncio.create_task(_register(rt, address, port), name="register-apiservice")
    try:
        await rt.informers.wait_for_cache_sync()

        async def loop() -> None:
            while True:
                started = asyncio.get_running_loop().time()
                current = targets_of(node_informer.store.list(), args.kubelet_preferred_address_types)
                answered, failed = await scraper.cycle(current)
                # One line per cycle: how long a whole scrape takes bounds how fresh metrics are.
                log.info("scraped %d nodes in %.3fs (%d did not answer)", answered, scraper.last_duration, failed)
                elapsed = asyncio.get_running_loop().time() - started
                await asyncio.sleep(max(args.metric_resolution - elapsed, 0.0))
        await loop()
    finally:
        if registration is not None:
            registration.cancel()
        await api.close()
        await scraper_http.aclose()


if __name__ == "__main__":
    sys.exit(main())
