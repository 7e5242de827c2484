"""What "running a container" means in a kubelet_sim process: two container runtimes behind one protocol.

The kubelet talks to its runtime through the CRI; kubelet_sim's Pod lifecycle
(:mod:`kubelet_sim.pods`) and kubelet API (:mod:`kubelet_sim.server`) talk to
one of these:

- :mod:`kubelet_sim.runtimes.simulated` (the default): no process at all, so
  one process hosts thousands of nodes. Containers start, become ready and
  exit when the Pod's ``kubesim.io/*`` annotations say; exec runs a built-in
  shell over a simulated filesystem; port-forward reaches a built-in HTTP
  listener on each declared container port;
- :mod:`kubelet_sim.runtimes.process` (``--runtime=process``): each container's
  ``command`` and ``args`` run as a real process on this host, unsandboxed.

Both share :class:`ContainerRuntime`: what the Pod lifecycle asks of a
runtime (start a container, stop it within a grace period) and what the
kubelet API asks (exec, attach, port-forward, resource usage).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from kubelet_sim.prober import Probe, Result
from kubelet_sim.streaming.portforward import Channel
from kubelet_sim.streaming.session import Session

if TYPE_CHECKING:
    from kubelet_sim.pods import SimPod
    from kubelet_sim.runtime import SimContainer

#: Called with the exit code when a container's process ends on its own or after a stop.
OnExit = Callable[[int], None]
#: (cumulative cpu core-seconds, cpu nanocores now, working-set bytes) of a container.
Usage = tuple[float, int, int]


class ContainerRuntime(Protocol):
    @property
    def name(self) -> str:
        """``simulated`` or ``process``."""
        ...

    @property
    def runs_processes(self) -> bool:
        """Whether containers are real processes (their exits come from the runtime, not from timers)."""
        ...

    async def start(self, pod: SimPod, container: SimContainer, on_exit: OnExit) -> None:
        """Start the container's process (raise ``StartError`` with the runtime's message when it cannot)."""
        ...

    def stop(self, pod: SimPod, container: SimContainer, grace: float) -> None:
        """SIGTERM now and SIGKILL after ``grace`` seconds; ``on_exit`` reports the end."""
        ...

    async def exec(self, pod: SimPod, container: SimContainer, command: Sequence[str], session: Session) -> int:
        ...

    async def probe(self, pod: SimPod, container: SimContainer, probe: Probe) -> Result:
        """One check of a startup, readiness or liveness probe."""
        ...

    async def attach(self, pod: SimPod, container: SimContainer, session: Session) -> int:
        ...

    async def port_forward(self, pod: SimPod, port: int, channel: Channel) -> None:
        ...

    def usage(self, pod: SimPod, container: SimContainer, now: float) -> Usage | None:
        """The running container's (cumulative core-seconds, nanocores now, working-set bytes), if known."""
        ...

    def forget(self, pod: SimPod) -> None:
        """The Pod is gone from the API: kill what it still runs and drop what it kept."""
        ...

    async def close(self) -> None:
        """Stop everything still running (kubelet_sim is stopping)."""
        ...


class StartError(Exception):
    """The runtime could not start the container (``RunContainerError``'s message)."""


def sandbox_id(uid: str) -> str:
    """A stable 64-hex-digit sandbox id for a Pod, as containerd names sandboxes."""
    return hashlib.sha256(f"sandbox/{uid}".encode()).hexdigest()


def netns_path(uid: str) -> str:
    digest = hashlib.sha256(f"netns/{uid}".encode()).hexdigest()
    return f"/var/run/netns/cni-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def connection_refused(uid: str, port: int) -> str:
    """containerd's message for a port nothing listens on inside the Pod's network namespace."""
    return (f'failed to execute portforward in network namespace "{netns_path(uid)}": failed to connect to '
            f'localhost:{port} inside namespace "{sandbox_id(uid)}", IPv4: dial tcp4 127.0.0.1:{port}: connect: '
            f'connection refused IPv6 dial tcp6 [::1]:{port}: connect: connection refused ')
