"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's ``leaderelection`` does it.

Several copies of the scheduler or the controller-manager may run; only the
holder of the Lease (``kube-system/kube-scheduler``,
``kube-system/kube-controller-manager``) does the work, the others wait as hot
standbys. The rules that keep two copies from ever both believing they lead:

- every write of the Lease is a PUT guarded by the resourceVersion last read,
  so of two candidates racing for it, one gets 409 Conflict and stays follower;
- a candidate takes over only when the Lease record has not changed for
  ``leaseDurationSeconds`` *as measured by its own clock* from when it last
  saw it change (never by comparing ``renewTime`` with its clock, which may be
  skewed);
- the leader renews every ``retry_period``; if it cannot renew within
  ``renew_deadline`` of its last successful renewal (shorter than the lease
  duration), or it sees another holder, it stops its work at once and
  :meth:`LeaderElector.run` raises :class:`LeadershipLost`. Kubernetes'
  components then exit, and kubesim's do the same.

On cancellation (SIGTERM) the leader stops its work and releases the Lease
(empty holder, ``leaseDurationSeconds: 1``), as client-go's
``ReleaseOnCancel``, so a standby takes over within one retry period.

Concurrency: one elector per Lease per process; :meth:`LeaderElector.run`
owns two tasks while leading (the work and the renewal loop) and never
returns with either still running.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import socket
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import httpx
from kubernetes.client import V1Lease, V1ObjectMeta

from machinery import metrics
from machinery.api.kinds import LEASES
from machinery.api.meta import format_micro_time, parse_time, utcnow
from machinery.client.backoff import jitter
from machinery.client.clock import Clock, RealClock
from machinery.client.errors import ApiError, NotFound
from machinery.client.objects import to_wire
from machinery.client.rest import Client
from machinery.events import NORMAL, EventRecorder
from machinery.workqueue import drain_allowed

log = logging.getLogger(__name__)

#: How much the candidates' retry period is stretched at random (client-go's ``JitterFactor``).
JITTER_FACTOR = 1.2


class LeadershipLost(Exception):
    """The Lease could not be renewed in time, or another candidate holds it."""


def default_identity() -> str:
    """``<hostname>_<uuid>``, as kube-scheduler and kube-controller-manager build theirs."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True, slots=True)
class LeaderElectionConfig:
    """Which Lease, who we are, and the timings (Kubernetes' defaults: 15 s, 10 s, 2 s)."""

    name: str
    identity: str
    namespace: str = "kube-system"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
        if self.lease_duration < 1:
            raise ValueError("leaseDuration must be at least one second")
        if self.retry_period <= 0:
            raise ValueError("retryPeriod must be greater than zero")
        if not self.identity:
            raise ValueError("leader election requires a non-empty identity")


@dataclass(frozen=True, slots=True)
class LeaderElectionRecord:
    """The Lease spec fields leader election reads and writes (times as MicroTime strings)."""

    holder_identity: str
    lease_duration_seconds: int
    acquire_time: str | None
    renew_time: str | None
    lease_transitions: int

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> LeaderElectionRecord:
        return cls(holder_identity=spec.get("holderIdentity") or "",
                   lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
                   acquire_time=_micro(spec.get("acquireTime")), renew_time=_micro(spec.get("renewTime")),
                   lease_transitions=int(spec.get("leaseTransitions") or 0))

    def to_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"leaseDurationSeconds": self.lease_duration_seconds,
                                "leaseTransitions": self.lease_transitions}
        if self.holder_identity:
            spec["holderIdentity"] = self.holder_identity
        if self.acquire_time:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time:
            spec["renewTime"] = self.renew_time
        return spec


class LeaderElector:
    """Campaigns for one Lease and runs the work only while holding it."""

    def __init__(self, client: Client, config: LeaderElectionConfig, *, recorder: EventRecorder | None = None,
                 clock: Clock | None = None) -> None:
        self._client = client
        self._config = config
        self._recorder = recorder
        self._clock = clock or RealClock()
        self._lease: dict[str, Any] | None = None
        self._observed: LeaderElectionRecord | None = None
        self._observed_at = 0.0
        self._renewed_at = 0.0
        self._reported_leader = ""
        self._leading = False
        self._lock = f"{config.namespace}/{config.name}"
        self._status = metrics.LEADER_ELECTION_MASTER_STATUS.labels(config.name)

    @property
    def is_leader(self) -> bool:
        """Whether the last record seen names us as holder."""
        return self._observed is not None and self._observed.holder_identity == self._config.identity

    @property
    def is_leading(self) -> bool:
        """Whether our work may act now: we lead and renewed within the renew deadline.

        Stricter than :attr:`is_leader`: after a long pause (a stopped process, a
        stalled loop) it turns False at once, before the renewal loop has run.
        """
        return self._leading and self._clock.now() < self._renewed_at + self._config.renew_deadline

    @property
    def leader(self) -> str:
        """The holder in the last record seen ("" if none)."""
        return self._observed.holder_identity if self._observed is not None else ""

    async def run(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Wait for the Lease, then run ``work()`` while holding it.

        Returns when the work returns (the Lease is then released); raises
        :class:`LeadershipLost` when the Lease is lost (the work has been
        cancelled); on cancellation, cancels the work and releases the Lease.
        """
        log.info("attempting to acquire leader lease %s...", self._lock)
        await self._acquire()
        log.info("successfully acquired lease %s", self._lock)
        self._status.set(1)
        self._leading = True
        self._record_event("became leader")
        # The work's context tells its worker pools whether they may drain when stopped.
        context = contextvars.copy_context()
        context.run(drain_allowed.set, lambda: self.is_leading)
        work_task = asyncio.create_task(work(), name=f"leading-{self._config.name}", context=context)
        renew_task = asyncio.create_task(self._renew_loop(), name=f"lease-renewal-{self._config.name}")
        lost = False
        try:
            done, _ = await asyncio.wait({work_task, renew_task}, return_when=asyncio.FIRST_COMPLETED)
            if renew_task in done:
                # Stop the work before anything else: from now on another candidate may lead.
                lost, self._leading = True, False
                work_task.cancel()
                renew_task.result()
                log.error("leaderelection lost: %s", self._lock)
                self._record_event("stopped leading")
                raise LeadershipLost(f"lost the leader lease {self._lock}")
            await work_task
        finally:
            # ``_leading`` stays set while a cancelled work drains: its worker pools may finish
            # what they hold, since the Lease is still ours until released.
            for task in (work_task, renew_task):
                task.cancel()
            await asyncio.gather(work_task, renew_task, return_exceptions=True)
            self._leading = False
            self._status.set(0)
            if not lost and self._config.release_on_cancel and self.is_leader:
                await self._release()

    # --- the loops -------------------------------------------------------------------------

    async def _acquire(self) -> None:
        while True:
            if await self._attempt(self._config.renew_deadline):
                return
            await self._clock.sleep(jitter(self._config.retry_period, JITTER_FACTOR))

    async def _renew_loop(self) -> None:
        """Renew every retry period; return (lost) when the renew deadline passes or another holds the Lease."""
        cfg = self._config
        while True:
            await self._clock.sleep(cfg.retry_period)
            while True:
                remaining = self._renewed_at + cfg.renew_deadline - self._clock.now()
                if remaining <= 0:
                    log.warning("failed to renew lease %s: no successful renewal for %.1fs",
                                self._lock, cfg.renew_deadline)
                    return
                if await self._attempt(remaining):
                    break
                if not self.is_leader:
                    log.warning("lease %s is now held by %s", self._lock, self.leader)
                    return
                await self._clock.sleep(min(cfg.retry_period, remaining))

    async def _attempt(self, timeout: float) -> bool:
        started = self._clock.now()
        try:
            async with asyncio.timeout(timeout):
                ok = await self._try_acquire_or_renew()
        except TimeoutError:
            log.warning("acquiring or renewing lease %s timed out", self._lock)
            ok = False
        if ok:
            self._renewed_at = started
        self._report_transition()
        return ok

    # --- one attempt -----------------------------------------------------------------------

    async def _try_acquire_or_renew(self) -> bool:
        cfg = self._config
        now = self._clock.now()
        wall = format_micro_time(utcnow())
        desired = LeaderElectionRecord(cfg.identity, int(cfg.lease_duration), wall, wall, 0)

        # Fast path: the leader writes over the version it wrote last, without reading first.
        if self.is_leader and self._lease_valid(now) and self._observed is not None:
            renewed = LeaderElectionRecord(cfg.identity, desired.lease_duration_seconds,
                                           self._observed.acquire_time, wall, self._observed.lease_transitions)
            try:
                await self._write(renewed, now)
                return True
            except (ApiError, httpx.TransportError) as err:
                log.debug("failed to update lease %s optimistically, falling back to slow path: %s",
                          self._lock, err)

        try:
            lease = to_wire(await self._client.get(LEASES, cfg.name, namespace=cfg.namespace))
        except NotFound:
            return await self._create(desired, now)
        except (ApiError, httpx.TransportError) as err:
            log.warning("error retrieving lease %s: %s", self._lock, err)
            return False
        self._lease = lease
        record = LeaderElectionRecord.from_spec(lease.get("spec") or {})
        if record != self._observed:
            self._observed = record
            self._observed_at = now
        if record.holder_identity and self._lease_valid(now) and not self.is_leader:
            log.debug("lease %s is held by %s and has not yet expired", self._lock, record.holder_identity)
            return False
        if self.is_leader:
            desired = LeaderElectionRecord(cfg.identity, desired.lease_duration_seconds, record.acquire_time,
                                           wall, record.lease_transitions)
        else:
            desired = LeaderElectionRecord(cfg.identity, desired.lease_duration_seconds, wall, wall,
                                           record.lease_transitions + 1)
        try:
            await self._write(desired, now)
        except (ApiError, httpx.TransportError) as err:
            log.warning("failed to update lease %s: %s", self._lock, err)
            return False
        return True

    async def _create(self, record: LeaderElectionRecord, now: float) -> bool:
        body = {"apiVersion": LEASES.api_version, "kind": LEASES.kind,
                "metadata": {"name": self._config.name, "namespace": self._config.namespace},
                "spec": record.to_spec()}
        try:
            self._lease = to_wire(await self._client.create(LEASES, body))
        except (ApiError, httpx.TransportError) as err:
            log.warning("error initially creating lease %s: %s", self._lock, err)
            return False
        self._observed, self._observed_at = record, now
        return True

    async def _write(self, record: LeaderElectionRecord, now: float) -> None:
        """PUT the record over the Lease last seen; its resourceVersion makes a concurrent writer lose."""
        assert self._lease is not None
        self._lease = to_wire(await self._client.update(LEASES, dict(self._lease, spec=record.to_spec())))
        self._observed, self._observed_at = record, now

    async def _release(self) -> None:
        assert self._observed is not None
        wall = format_micro_time(utcnow())
        record = LeaderElectionRecord("", 1, wall, wall, self._observed.lease_transitions)
        try:
            async with asyncio.timeout(self._config.renew_deadline):
                await self._write(record, self._clock.now())
        except (ApiError, httpx.TransportError, TimeoutError) as err:
            log.warning("failed to release lease %s: %s", self._lock, err or type(err).__name__)
            return
        log.info("released lease %s", self._lock)

    def _lease_valid(self, now: float) -> bool:
        duration = self._observed.lease_duration_seconds if self._observed is not None else 0
        return self._observed_at + duration > now

    def _report_transition(self) -> None:
        if self.leader and self.leader != self._reported_leader:
            self._reported_leader = self.leader
            log.info("new leader elected: %s", self.leader)

    def _record_event(self, what: str) -> None:
        if self._recorder is not None:
            lease = V1Lease(metadata=V1ObjectMeta(name=self._config.name, namespace=self._config.namespace))
            self._recorder.event(lease, NORMAL, "LeaderElection", f"{self._config.identity} {what}")


def _micro(value: Any) -> str | None:
    parsed = parse_time(value) if isinstance(value, str) else None
    return format_micro_time(parsed) if parsed is not None else None
