"""``python -m kubelet_sim --master URL [--nodes N] [--node-profile FILE]``: the kubelets of many nodes.

One process hosts one node or thousands, each acting through the API as a
kubelet does (steps 11 to 13 of the flow): it registers its Node, renews its
Lease, watches the Pods bound to it, admits and "runs" them, and reports their
status. Every node acts on its own, so there is no leader election.

Each node acts as ``system:node:<name>`` when ``--node-tokens`` gives it a token
(see ``credentials.py``); the process's own requests (the watches, Events) use
``--kubeconfig``'s credentials, which ``kubesim up`` makes its first node's;
adopted nodes, created at run time and so without a token, act with
``--adopted-nodes-kubeconfig``'s (kubesim's study-only ``kubesim:node-adopter``).

The process watches Pods with one watch for all its nodes (a field selector
on ``spec.nodeName``: the node's name when it hosts one node, ``!=`` (any
bound Pod) when it hosts several or adopts nodes) and Nodes with another, and
serves the kubelet API (logs, exec, attach, port-forward, metrics, node
stop/start) over HTTPS on ``--kubelet-port``, to whom the kubelet's own security
flags let in (:mod:`kubelet_sim.auth`).
With ``--adopt-nodes`` it also simulates the existing Nodes annotated
``kubesim.io/adopt-node: "true"`` (see :mod:`kubelet_sim.adopt`).

Concurrency: everything runs on the event loop of :func:`machinery.process.run`;
this module starts the node manager, the Pod status writers and the kubelet
API server as named tasks and stops them together.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import ipaddress
import socket
import ssl
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from kubelet_sim.adopt import Adopter
from kubelet_sim.auth import KubeletAuth
from kubelet_sim.credentials import CredentialsError, load_node_tokens
from kubelet_sim.eviction import EvictionManager
from kubelet_sim.node import NodeManager
from kubelet_sim.pods import PodManager
from kubelet_sim.profile import NodeProfile, PlannedNode, ProfileError, Timings, load_profile
from kubelet_sim.runtimes import ContainerRuntime
from kubelet_sim.runtimes.process import ProcessRuntime
from kubelet_sim.runtimes.simulated import SimulatedRuntime
from kubelet_sim.server import KubeletServer
from kubelet_sim.stats import StatsProvider
from kubelet_sim.usage import UsageProfile
from kubelet_sim.views import NODE_VIEWS, POD_VIEWS
from machinery import process, tlsserving
from machinery.client import Client
from machinery.client.config import load_kubeconfig
from machinery.informer import NODE_NAME_INDEX, index_pod_by_node_name

COMPONENT = "kubelet_sim"
DESCRIPTION = "Simulated kubelets: registers nodes, renews their Leases, runs the Pods bound to them."


def add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=process.non_negative_int_arg, default=None, metavar="N",
                        help="How many nodes to simulate; the profile's node groups are scaled to N in "
                             "proportion (default: the profile's counts; 3 with the default profile). 0 only "
                             "with --adopt-nodes: the process then simulates adopted nodes alone.")
    parser.add_argument("--node-offset", type=process.non_negative_int_arg, default=0, metavar="K",
                        help="Host one shard of a larger cluster: number this process's nodes after the K "
                             "nodes that other kubelet_sim processes host (with the same one-group profile), "
                             "so several processes, on one machine or several, host one cluster (default: 0).")
    parser.add_argument("--adopt-nodes", action="store_true",
                        help="Also simulate every existing Node annotated kubesim.io/adopt-node=true (from a "
                             "snapshot or a replayed trace), keeping its capacity, labels, taints and conditions.")
    parser.add_argument("--adopted-nodes-kubeconfig", metavar="FILE", default=None,
                        help="The credentials adopted nodes act with (they have no token in --node-tokens: "
                             "kubesim up gives the study-only user kubesim:node-adopter, which may do what any "
                             "node may) (default: --kubeconfig's).")
    parser.add_argument("--node-profile", metavar="FILE", default=None,
                        help="A node profile YAML: node groups (names, capacity, labels, taints, zones) "
                             "and timings (default: the profile packaged with kubelet_sim).")
    parser.add_argument("--kubelet-port", type=process.port_arg, default=0, metavar="PORT",
                        help="Port of the kubelet API (container logs, exec, attach, port-forward, node stop/start); "
                             "0 picks a free one "
                             "(default: 0).")
    parser.add_argument("--bind-address", default="127.0.0.1", metavar="ADDRESS",
                        help="Address the kubelet API listens on (default: 127.0.0.1; 0.0.0.0 in a container).")
    parser.add_argument("--node-ip", type=_node_ip, default="127.0.0.1", metavar="IP",
                        help="The nodes' InternalIP, where the APIServer reaches the kubelet API for logs; "
                             "'auto' takes this host's address (default: 127.0.0.1).")
    parser.add_argument("--runtime", choices=("simulated", "process"), default="simulated",
                        help="What runs a container: 'simulated' (no process; exec runs a built-in shell, "
                             "port-forward reaches a built-in listener; thousands of nodes per process) or "
                             "'process' (each container's command runs as a real, unsandboxed process on this "
                             "host; for a few nodes) (default: simulated).")
    parser.add_argument("--root-dir", metavar="DIR", default=None,
                        help="Where the process runtime keeps each container's volumes and files "
                             "(default: a new temporary directory, removed at exit).")
    parser.add_argument("--node-tokens", metavar="FILE", default=None,
                        help="Each node's own credentials: a file in kube-apiserver's --token-auth-file format "
                             "whose user system:node:<name> lines give node <name> its bearer token; nodes "
                             "without one act with --kubeconfig's credentials (default: none).")
    secure = parser.add_argument_group(
        "kubelet API security", "As the kubelet's own flags: the kubelet API is always HTTPS; who may use it is "
                                "decided by these (kubesim up gives kubeadm's: client certificates and tokens "
                                "checked, no anonymous requests, every request authorized by the APIServer).")
    secure.add_argument("--tls-cert-file", metavar="FILE", default=None,
                        help="The kubelet API's serving certificate (PEM) (default: a self-signed one made at "
                             "start, kept in --cert-dir when given).")
    secure.add_argument("--tls-private-key-file", metavar="FILE", default=None,
                        help="The key of --tls-cert-file (PEM).")
    secure.add_argument("--cert-dir", metavar="DIR", default=None,
                        help="Where a self-signed serving certificate is kept (kubelet.crt, kubelet.key) when "
                             "--tls-cert-file is not given (default: none: a new one each start).")
    secure.add_argument("--client-ca-file", metavar="FILE", default=None,
                        help="Clients presenting a certificate signed by this CA are the user its CN names, in "
                             "the groups its O names (the APIServer's --kubelet-client-certificate) "
                             "(default: none).")
    secure.add_argument("--anonymous-auth", type=process.bool_arg, default=True, metavar="BOOL",
                        help="Serve requests that carry no credentials, as system:anonymous (default: true, "
                             "as the kubelet's; kubesim up sets false).")
    secure.add_argument("--authentication-token-webhook", type=process.bool_arg, nargs="?", const=True,
                        default=False, metavar="BOOL",
                        help="Authenticate bearer tokens with a TokenReview to the APIServer (default: false).")
    secure.add_argument("--authentication-token-webhook-cache-ttl", type=process.duration_arg, default=120.0,
                        metavar="DURATION", help="How long TokenReview answers are kept (default: 2m).")
    secure.add_argument("--authorization-mode", choices=("AlwaysAllow", "Webhook"), default="AlwaysAllow",
                        help="AlwaysAllow, or Webhook: a SubjectAccessReview of nodes/<subresource> per request "
                             "(default: AlwaysAllow, as the kubelet's; kubesim up sets Webhook).")
    secure.add_argument("--authorization-webhook-cache-authorized-ttl", type=process.duration_arg, default=300.0,
                        metavar="DURATION", help="How long allowed answers are kept (default: 5m).")
    secure.add_argument("--authorization-webhook-cache-unauthorized-ttl", type=process.duration_arg,
                        default=30.0, metavar="DURATION", help="How long denied answers are kept (default: 30s).")
    parser.add_argument("--node-lease-renew-interval", type=process.positive_duration_arg, default=None, metavar="DURATION",
                        help="How often each node renews its Lease in kube-node-lease "
                             "(default: the profile's, 10s).")


def build_parser() -> argparse.ArgumentParser:
    """kubelet_sim's flags (what docker-compose.yml and kubesim up pass are checked against it)."""
    return process.build_parser(COMPONENT, description=DESCRIPTION, add_flags=add_flags)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        profile = load_profile(args.node_profile)
        planned = profile.plan(args.nodes, offset=args.node_offset)
    except ProfileError as err:
        parser.error(str(err))
    if not planned and not args.adopt_nodes:
        parser.error("--nodes=0 simulates no node: use it with --adopt-nodes")
    timings = profile.timings
    try:
        tokens = load_node_tokens(args.node_tokens) if args.node_tokens else {}
    except CredentialsError as err:
        parser.error(str(err))
    if args.node_lease_renew_interval is not None:
        timings = dataclasses.replace(timings, node_lease_renew_interval=args.node_lease_renew_interval)
    try:
        tls = serving_context(args)
    except (OSError, ValueError, ssl.SSLError) as err:
        parser.error(f"cannot serve the kubelet API over TLS: {err}")
    return process.run(COMPONENT, functools.partial(run, planned=planned, timings=timings, profile=profile,
                                                    tokens=tokens, tls=tls),
                       argv=argv, description=DESCRIPTION, add_flags=add_flags)


def serving_context(args: argparse.Namespace) -> ssl.SSLContext:
    """The kubelet API's TLS: the given certificate or a self-signed one for the nodes' address."""
    hosts = [h for h in (args.node_ip, args.bind_address) if h not in ("0.0.0.0", "::")]
    cert, key = tlsserving.serving_pair(args.tls_cert_file, args.tls_private_key_file, args.cert_dir,
                                        [*hosts, "127.0.0.1", "localhost", socket.gethostname()], stem="kubelet")
    return tlsserving.server_context(cert, key, args.client_ca_file)


def kubelet_auth(args: argparse.Namespace, client: Client) -> KubeletAuth:
    """Who may use the kubelet API, from the security flags; reviews are asked of the APIServer as ``client``."""
    return KubeletAuth(anonymous=args.anonymous_auth, token_webhook=args.authentication_token_webhook,
                       mode=args.authorization_mode, reviewer=client,
                       token_ttl=args.authentication_token_webhook_cache_ttl,
                       authorized_ttl=args.authorization_webhook_cache_authorized_ttl,
                       unauthorized_ttl=args.authorization_webhook_cache_unauthorized_ttl)


async def run(rt: process.Runtime, *, planned: Sequence[PlannedNode], timings: Timings,
              profile: NodeProfile, tokens: Mapping[str, str] | None = None, tls: ssl.SSLContext | None = None
              ) -> None:
    """Register the nodes and run their Pods until cancelled; each node acts with its token when it has one."""
    async with contextlib.AsyncExitStack() as stack:
        adopted_client = rt.client
        adopted_config = getattr(rt.args, "adopted_nodes_kubeconfig", None)
        if adopted_config:
            config = load_kubeconfig(adopted_config)
            if rt.args.master:
                config = config.with_server(rt.args.master)
            adopted_client = await stack.enter_async_context(Client(config, user_agent="kubesim-kubelet_sim"))
        await _run(rt, planned=planned, timings=timings, profile=profile, tokens=tokens or {},
                   adopted_client=adopted_client, tls=tls)


async def _run(rt: process.Runtime, *, planned: Sequence[PlannedNode], timings: Timings, profile: NodeProfile,
               tokens: Mapping[str, str], adopted_client: Client, tls: ssl.SSLContext | None) -> None:
    client, informers, events = rt.client, rt.informers, rt.events
    usage = profile.usage
    own = {p.name for p in planned}

    def client_for(name: str) -> Client:
        token = tokens.get(name)
        if token:
            return client.with_token(token)
        return client if name in own else adopted_client

    adopting = bool(getattr(rt.args, "adopt_nodes", False))
    selector = f"spec.nodeName={planned[0].name}" if len(planned) == 1 and not adopting else "spec.nodeName!="
    pod_informer = informers.informer(POD_VIEWS, field_selector=selector,
                                      indexers={NODE_NAME_INDEX: index_pod_by_node_name})
    node_informer = informers.informer(NODE_VIEWS)
    nodes = NodeManager(client, events, planned, timings=timings, on_active=lambda node: pods.node_active(node),
                        node_ip=rt.args.node_ip, client_for=client_for)
    runtime = make_runtime(rt, usage)
    adopter = Adopter(client, nodes, cluster_cidr=profile.cluster_cidr, node_cidr_mask_size=profile.node_cidr_mask_size,
                      first_index=len(planned)) if adopting else None
    if adopter is not None:
        nodes.on_unknown_node = adopter.on_unknown_node
    pods = PodManager(client, pod_informer.store, nodes.nodes, timings=timings,
                      heartbeats_on_time=nodes.heartbeats_on_time, runtime=runtime)
    stats = StatsProvider(pods, runtime, usage)
    eviction = EvictionManager(nodes.nodes, pods, stats, threshold=profile.eviction_memory_available,
                               period=timings.eviction_monitoring_period,
                               transition=timings.eviction_pressure_transition_period)
    node_informer.add_handler(on_add=nodes.on_node, on_update=lambda _old, new: nodes.on_node(new),
                              on_delete=nodes.on_node_deleted)
    rt.add_readiness_check("nodes-registered", lambda: nodes.all_registered)
    server = KubeletServer(pods, nodes, runtime, stats, auth=kubelet_auth(rt.args, client), tls=tls)
    port = await server.start(rt.args.kubelet_port, rt.args.bind_address)
    try:
        await informers.wait_for_cache_sync()
        pod_informer.add_handler(on_add=pods.on_pod, on_update=lambda _old, new: pods.on_pod(new),
                                 on_delete=pods.on_pod_deleted)
        async with asyncio.TaskGroup() as group:
            group.create_task(nodes.run(port), name="nodes")
            group.create_task(pods.run(), name="pod-status")
            group.create_task(eviction.run(), name="eviction")
            if adopter is not None:
                group.create_task(adopter.run(), name="node-adoption")
    finally:
        await server.close()
        await runtime.close()


def make_runtime(rt: process.Runtime, usage: UsageProfile) -> ContainerRuntime:
    if rt.args.runtime == "process":
        root = Path(rt.args.root_dir) if rt.args.root_dir else None
        return ProcessRuntime(rt.client, root)
    return SimulatedRuntime(rt.client, usage)


def _node_ip(text: str) -> str:
    """An IP address, or ``auto``: the address this host's name resolves to (a container's own)."""
    if text == "auto":
        try:
            text = socket.gethostbyname(socket.gethostname())
        except OSError as err:
            raise argparse.ArgumentTypeError(f"cannot find this host's address: {err}") from None
    try:
        ipaddress.ip_address(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an IP address: {text!r}") from None
    return text


if __name__ == "__main__":
    sys.exit(main())
