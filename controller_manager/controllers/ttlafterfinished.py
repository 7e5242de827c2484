"""The TTL-after-finished controller: finished Jobs with ``ttlSecondsAfterFinished`` are deleted when it runs out.

Kubernetes' ``pkg/controller/ttlafterfinished``: a Job whose Complete or
Failed condition is True and that sets ``spec.ttlSecondsAfterFinished`` is
deleted (Foreground propagation, so its Pods go first) that many seconds
after the condition's ``lastTransitionTime``; a Job not due yet is looked at
again when it will be. Before deleting, the Job is read again from the
APIServer, so a TTL changed in the meantime is honoured.

Concurrency: ``concurrent_ttl_after_finished_syncs`` workers keyed by Job.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Final

from kubernetes.client import V1Job

from controller_manager.context import ControllerContext
from machinery.api.kinds import JOBS, ObjectKey, split_key
from machinery.api.meta import utcnow
from machinery.client.errors import NotFound
from machinery.client.objects import meta_of
from machinery.controller import Controller

log = logging.getLogger(__name__)

NAME: Final = "ttl-after-finished-controller"
ALIASES: Final = ("ttl-after-finished",)


class TTLAfterFinishedController(Controller):
    def __init__(self, ctx: ControllerContext) -> None:
        self._jobs = ctx.informers.informer(JOBS)
        super().__init__("ttl_jobs_to_delete", informers=[self._jobs],
                         workers=ctx.options.concurrent_ttl_after_finished_syncs, clock=ctx.clock)
        self._client = ctx.client
        self._is_leading = ctx.is_leading
        self._jobs.add_handler(on_add=self._changed, on_update=lambda _o, n: self._changed(n))

    def _changed(self, job: V1Job) -> None:
        if needs_cleanup(job):
            self.enqueue(job)

    async def sync(self, key: ObjectKey) -> None:
        job = self._jobs.store.get(key)
        if job is None or not needs_cleanup(job) or not self._is_leading():
            return
        left = time_left(job)
        if left is None:
            return
        if left > 0:
            self.queue.add_after(key, left)
            return
        namespace, name = split_key(key)
        try:
            fresh = await self._client.get(JOBS, name, namespace=namespace)
        except NotFound:
            return
        fresh_left = time_left(fresh) if needs_cleanup(fresh) else None
        if fresh_left is None:
            return
        if fresh_left > 0:
            self.queue.add_after(key, fresh_left)
            return
        log.info("cleaning up Job %s: its TTL after finishing has passed", key)
        try:
            await self._client.delete(JOBS, name, namespace=namespace, uid=meta_of(fresh).uid,
                                      resource_version=meta_of(fresh).resource_version,
                                      propagation_policy="Foreground")
        except NotFound:
            pass


def _finished_at(job: V1Job) -> object:
    for condition in (job.status.conditions if job.status is not None else None) or ():
        if condition.type in ("Complete", "Failed") and condition.status == "True":
            return condition.last_transition_time
    return None


def needs_cleanup(job: V1Job) -> bool:
    ttl = job.spec.ttl_seconds_after_finished if job.spec is not None else None
    return ttl is not None and meta_of(job).deletion_timestamp is None and _finished_at(job) is not None


def time_left(job: V1Job) -> float | None:
    """Seconds until the Job expires (negative once it has); None if it is not finished."""
    finished = _finished_at(job)
    ttl = job.spec.ttl_seconds_after_finished if job.spec is not None else None
    if not isinstance(finished, dt.datetime) or ttl is None:
        return None
    return (finished - utcnow()).total_seconds() + ttl
