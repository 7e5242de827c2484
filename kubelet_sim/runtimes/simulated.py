"""The simulated runtime: containers without processes, exec into a built-in shell, a built-in listener.

Containers' lives are timers driven by the Pod's annotations
(:mod:`kubelet_sim.runtime`, :mod:`kubelet_sim.pods`); this module adds what a
person does with a running container:

- **exec** reads the whole Pod once (env, volumes, mounts), builds the
  container's variables and mounts its volumes (ConfigMaps and Secrets read
  through the API as the Pod's node, :func:`node_client`) into the
  container's :class:`~kubelet_sim.rootfs.RootFS`
  (kept for the container instance, so files copied in stay), then runs the
  command in :mod:`kubelet_sim.shell`;
- **attach** streams what the container prints from now on, until it exits
  or the client leaves (a simulated container reads no stdin);
- **port-forward** reaches :mod:`kubelet_sim.runtimes.listener` on a TCP port
  a container declares; any other port is refused with containerd's message.

Concurrency: on the event loop; a container's filesystem is only touched by
the sessions of that container, one command at a time each.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubelet_sim.pods import SimPod
from kubelet_sim.prober import Probe, Result, simulated_check
from kubelet_sim.rootfs import RootFS, normalize
from kubelet_sim.runtime import SimContainer, State
from kubelet_sim.runtimes import OnExit, Usage, connection_refused
from kubelet_sim.runtimes.listener import serve_http
from kubelet_sim.shell import Shell, run_session
from kubelet_sim.streaming.portforward import Channel, PortForwardError
from kubelet_sim.streaming.session import ExecError, Session
from kubelet_sim.usage import UsageProfile, container_usage
from kubelet_sim.views import CONFIG_MAPS, SECRETS, WIRE_PODS
from kubelet_sim.volumes import (
    BoundPod,
    ObjectSource,
    VolumeError,
    container_environment,
    pod_hostname,
    volume_files,
)
from machinery.api.quantity import resource_list
from machinery.client import ApiError, Client, NotFound

log = logging.getLogger("kubelet_sim.runtime")

#: Volume kinds the kubelet mounts read-only whatever the mount says.
READ_ONLY_VOLUMES: Final = ("configMap", "secret", "downwardAPI", "projected")


class ApiObjects:
    """ConfigMaps and Secrets through the API (None when missing, or when the API does not serve them)."""

    def __init__(self, client: Client) -> None:
        self._client = client

    async def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return (await self._client.get(CONFIG_MAPS, name, namespace=namespace)).wire()
        except NotFound:
            return None

    async def secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return (await self._client.get(SECRETS, name, namespace=namespace)).wire()
        except NotFound:
            return None

    async def service_account_token(self, namespace: str, service_account: str, pod: BoundPod,
                                     audience: str, expiration_seconds: int) -> str:
        """A TokenRequest as the kubelet makes it: as the node, bound to the Pod (NodeRestriction requires it)."""
        try:
            token, _expires = await self._client.create_token(
                namespace, service_account, expiration_seconds=expiration_seconds,
                audiences=[audience] if audience else (),
                bound_object={"kind": "Pod", "apiVersion": "v1", "name": pod.name, "uid": pod.uid})
        except ApiError as err:
            raise VolumeError(f"failed to fetch token: {err}") from err
        return token


def node_client(pod: SimPod, default: Client) -> Client:
    """The client acting as the node the Pod is bound to (``default`` when the node has no identity of its own).

    A kubelet reads a Pod's Secrets and ConfigMaps as itself, and the Node authorizer lets
    ``system:node:<name>`` read only those of the Pods bound to ``<name>``: the process's own client
    is one node's (the first's), which may read nothing of the Pods of the others.
    """
    return pod.node.client or default


async def read_pod(client: Client, pod: SimPod) -> dict[str, Any]:
    try:
        return (await client.get(WIRE_PODS, pod.name, namespace=pod.namespace)).wire()
    except ApiError as err:
        raise ExecError(f"cannot read pod {pod.namespace}/{pod.name}: {err}") from err


def container_spec(pod: Mapping[str, Any], name: str) -> dict[str, Any]:
    spec = pod.get("spec") or {}
    for c in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ()),
              *(spec.get("ephemeralContainers") or ())]:
        if c.get("name") == name:
            return dict(c)
    return {"name": name}


def etc_hosts(pod_ip: str, hostname: str) -> bytes:
    """The hosts file the kubelet writes into every container (``managedHostsFileContent``)."""
    lines = ["# Kubernetes-managed hosts file.", "127.0.0.1\tlocalhost",
             "::1\tlocalhost ip6-localhost ip6-loopback", "fe00::0\tip6-localnet", "fe00::0\tip6-mcastprefix",
             "fe00::1\tip6-allnodes", "fe00::2\tip6-allrouters"]
    if pod_ip:
        lines.append(f"{pod_ip}\t{hostname}")
    return ("\n".join(lines) + "\n").encode()


def resolv_conf(namespace: str) -> bytes:
    return (f"search {namespace}.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\n"
            "options ndots:5\n").encode()


async def mounted_volumes(pod: Mapping[str, Any], spec: Mapping[str, Any], source: ObjectSource, *,
                          strict: bool) -> dict[str, tuple[dict[str, tuple[bytes, int]], bool]]:
    """mount path -> (files, read-only) for the container's ``volumeMounts`` (``subPath`` included)."""
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or ()}
    files = await volume_files(pod, source, strict=strict)
    mounts: dict[str, tuple[dict[str, tuple[bytes, int]], bool]] = {}
    for mount in spec.get("volumeMounts") or ():
        name = mount.get("name")
        volume = volumes.get(name) or {}
        read_only = bool(mount.get("readOnly")) or any(k in volume for k in READ_ONLY_VOLUMES)
        content = files.get(name, {})
        sub = (mount.get("subPath") or "").strip("/")
        if sub:
            if sub in content:
                content = {"": content[sub]}
            else:
                prefix = sub + "/"
                content = {k[len(prefix):]: v for k, v in content.items() if k.startswith(prefix)}
        mounts[normalize(mount.get("mountPath") or "/")] = (content, read_only)
    return mounts


class SimulatedRuntime:
    name: Final = "simulated"

    def __init__(self, client: Client, usage: UsageProfile | None = None) -> None:
        self._client = client
        self._usage = usage or UsageProfile()

    @property
    def runs_processes(self) -> bool:
        return False

    async def start(self, pod: SimPod, container: SimContainer, on_exit: OnExit) -> None:
        container.rootfs = None

    def stop(self, pod: SimPod, container: SimContainer, grace: float) -> None:
        return

    def forget(self, pod: SimPod) -> None:
        return

    async def close(self) -> None:
        return

    async def shell(self, pod: SimPod, container: SimContainer, session: Session) -> Shell:
        """A shell in the container, with its variables and its volumes mounted as they are now."""
        client = node_client(pod, self._client)
        objects = ApiObjects(client)
        wire = await read_pod(client, pod)
        spec = container_spec(wire, container.name)
        hostname = pod_hostname(wire)
        try:
            env = await container_environment(wire, spec, objects, hostname=hostname,
                                              node_allocatable=pod.node.planned.group.allocatable,
                                              tty=session.tty)
        except VolumeError:
            env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME": hostname,
                   "HOME": "/root"}
        fs = container.rootfs
        if fs is None:
            fs = container.rootfs = RootFS()
        fs.mount(await mounted_volumes(wire, spec, objects, strict=False))
        fs.put_system_file("/etc/hostname", (hostname + "\n").encode())
        fs.put_system_file("/etc/hosts", etc_hosts(pod.pod_ip, hostname))
        fs.put_system_file("/etc/resolv.conf", resolv_conf(pod.namespace))
        cwd = normalize(spec.get("workingDir") or "/")
        if not fs.is_dir(cwd):
            with contextlib.suppress(OSError):
                fs.mkdir(cwd, parents=True)
        return Shell(fs, env, hostname, gone=session.gone, cwd=cwd if fs.is_dir(cwd) else "/", tty=session.tty)

    async def exec(self, pod: SimPod, container: SimContainer, command: Sequence[str], session: Session) -> int:
        shell = await self.shell(pod, container, session)
        return await run_session(shell, list(command), session)

    async def attach(self, pod: SimPod, container: SimContainer, session: Session) -> int:
        log = container.log
        if log is None or container.state is not State.RUNNING:
            return 0
        follow = asyncio.create_task(self._follow(log, session), name="attach-follow")
        gone = asyncio.create_task(session.gone.wait(), name="attach-gone")
        try:
            await asyncio.wait({follow, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (follow, gone):
                task.cancel()
            await asyncio.gather(follow, gone, return_exceptions=True)
        return 0

    @staticmethod
    async def _follow(log: Any, session: Session) -> None:
        async for _when, text in log.read(len(log.lines), follow=True):
            await session.write_out((text + "\n").encode())

    async def probe(self, pod: SimPod, container: SimContainer, probe: Probe) -> Result:
        """The outcome the Pod's ``kubesim.io/<kind>-probe`` annotations script (see kubelet_sim.prober)."""
        ready_after = container.behaviour.ready_after if container.behaviour is not None else 0.0
        check = simulated_check(pod.view.metadata.annotations or {}, container.name, pod.pod_ip, ready_after)
        # started_mono is on the kubelet's clock, RealClock's time.monotonic().
        result = check(probe, time.monotonic() - container.started_mono)
        assert isinstance(result, Result)
        return result

    def usage(self, pod: SimPod, container: SimContainer, now: float) -> Usage | None:
        """What the container uses now, from its Pod's ``kubesim.io/*-usage`` annotations or the profile."""
        model = container.usage
        if model is None:
            specs = [*pod.view.spec.containers, *(pod.view.spec.init_containers or ())]
            spec = next((s for s in specs if s.name == container.name), None)
            requests = resource_list(((spec.resources or {}) if spec is not None else {}).get("requests"))
            model, problems = container_usage(pod.view.metadata.annotations or {}, container.name, requests,
                                              self._usage, container_id=container.container_id,
                                              started=container.started_mono)
            for problem in problems:
                log.warning("%s/%s container %s: %s", pod.namespace, pod.name, container.name, problem)
            container.usage = model
        core_seconds, working_set = model.sample(now)
        return core_seconds, int(model.cpu_millicores(now) * 1e6), working_set

    async def port_forward(self, pod: SimPod, port: int, channel: Channel) -> None:
        declared = {p.container_port for c in pod.view.spec.containers for p in c.ports or ()
                    if (p.protocol or "TCP") == "TCP"}
        declared |= {p.container_port for c in pod.view.spec.init_containers or () if c.restart_policy == "Always"
                     for p in c.ports or () if (p.protocol or "TCP") == "TCP"}
        if port not in declared or not any(c.state is State.RUNNING for c in pod.all_containers):
            raise PortForwardError(connection_refused(pod.uid, port))
        await serve_http(channel, pod.name)

