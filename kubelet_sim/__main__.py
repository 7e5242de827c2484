"""``python -m kubelet_sim --master URL [--nodes N] [--node-profile FILE]``: the kubelets of many nodes.

One process hosts one node or thousands, each acting through the API as a
kubelet does (steps 11 to 13 of the flow): it registers its Node, renews its
Lease, watches the Pods bound to it, admits and "runs" them, and reports their
status. Every node acts on its own, so there is no leader election.

The process watches Pods with one watch for all its nodes (a field selector
on ``spec.nodeName``: the node's name when it hosts one node, ``!=`` (any
bound Pod) when it hosts several) and Nodes with another, and serves the
kubelet API (container logs, node stop/start) on ``--kubelet-port``.

Concurrency: everything runs on the event loop of :func:`machinery.process.run`;
this module starts the node manager, the Pod status writers and the kubelet
API server as named tasks and stops them together.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import ipaddress
import socket
import sys
from collections.abc import Sequence

from kubelet_sim.node import NodeManager
from kubelet_sim.pods import PodManager
from kubelet_sim.profile import PlannedNode, ProfileError, Timings, load_profile
from kubelet_sim.server import KubeletServer
from kubelet_sim.views import NODE_VIEWS, POD_VIEWS
from machinery import process
from machinery.informer import NODE_NAME_INDEX, index_pod_by_node_name

COMPONENT = "kubelet_sim"
DESCRIPTION = "Simulated kubelets: registers nodes, renews their Leases, runs the Pods bound to them."


def add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=process.positive_int_arg, default=None, metavar="N",
                        help="How many nodes to simulate; the profile's node groups are scaled to N in "
                             "proportion (default: the profile's counts; 3 with the default profile).")
    parser.add_argument("--node-profile", metavar="FILE", default=None,
                        help="A node profile YAML: node groups (names, capacity, labels, taints, zones) "
                             "and timings (default: the profile packaged with kubelet_sim).")
    parser.add_argument("--kubelet-port", type=process.port_arg, default=0, metavar="PORT",
                        help="Port of the kubelet API (container logs, node stop/start); 0 picks a free one "
                             "(default: 0).")
    parser.add_argument("--bind-address", default="127.0.0.1", metavar="ADDRESS",
                        help="Address the kubelet API listens on (default: 127.0.0.1; 0.0.0.0 in a container).")
    parser.add_argument("--node-ip", type=_node_ip, default="127.0.0.1", metavar="IP",
                        help="The nodes' InternalIP, where the APIServer reaches the kubelet API for logs; "
                             "'auto' takes this host's address (default: 127.0.0.1).")
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
        planned = profile.plan(args.nodes)
    except ProfileError as err:
        parser.error(str(err))
    timings = profile.timings
    if args.node_lease_renew_interval is not None:
        timings = dataclasses.replace(timings, node_lease_renew_interval=args.node_lease_renew_interval)
    return process.run(COMPONENT, functools.partial(run, planned=planned, timings=timings), argv=argv,
                       description=DESCRIPTION, add_flags=add_flags)


async def run(rt: process.Runtime, *, planned: Sequence[PlannedNode], timings: Timings) -> None:
    """Register the nodes and run their Pods until cancelled."""
    client, informers, events = rt.client, rt.informers, rt.events
    selector = f"spec.nodeName={planned[0].name}" if len(planned) == 1 else "spec.nodeName!="
    pod_informer = informers.informer(POD_VIEWS, field_selector=selector,
                                      indexers={NODE_NAME_INDEX: index_pod_by_node_name})
    node_informer = informers.informer(NODE_VIEWS)
    nodes = NodeManager(client, events, planned, timings=timings, on_active=lambda node: pods.node_active(node),
                        node_ip=rt.args.node_ip)
    pods = PodManager(client, pod_informer.store, nodes.nodes, timings=timings,
                      heartbeats_on_time=nodes.heartbeats_on_time)
    node_informer.add_handler(on_add=nodes.on_node, on_update=lambda _old, new: nodes.on_node(new),
                              on_delete=nodes.on_node_deleted)
    rt.add_readiness_check("nodes-registered", lambda: nodes.all_registered)
    server = KubeletServer(pods, nodes)
    port = await server.start(rt.args.kubelet_port, rt.args.bind_address)
    try:
        await informers.wait_for_cache_sync()
        pod_informer.add_handler(on_add=pods.on_pod, on_update=lambda _old, new: pods.on_pod(new),
                                 on_delete=pods.on_pod_deleted)
        async with asyncio.TaskGroup() as group:
            group.create_task(nodes.run(port), name="nodes")
            group.create_task(pods.run(), name="pod-status")
    finally:
        await server.close()


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
