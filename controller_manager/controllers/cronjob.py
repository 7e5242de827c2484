"""The CronJob controller: a Job per scheduled time, within the CronJob's concurrency and deadline rules.

Kubernetes' ``pkg/controller/cronjob`` (the v2 controller):

- The schedule is cron syntax (five fields or ``@hourly``-style descriptors,
  parsed by ``croniter``) in ``spec.timeZone`` (an IANA name; the
  controller's own zone, UTC here, when unset). Each sync finds the most
  recent scheduled time not yet run since ``status.lastScheduleTime`` (or the
  creation time), bounded by ``startingDeadlineSeconds``; over 100 missed
  times it warns (``TooManyMissedTimes``) and runs only the latest. A time
  whose starting deadline passed is skipped (``MissSchedule``).
- The Job is ``<cronjob>-<scheduled time in minutes since the epoch>``, made
  from ``jobTemplate`` with the ``batch.kubernetes.io/cronjob-scheduled-timestamp``
  annotation and a controller reference; an existing Job of that name
  counts as made.
- ``concurrencyPolicy``: Allow runs Jobs side by side, Forbid skips a time
  while one is active, Replace deletes the active ones first. ``suspend``
  stops new Jobs.
- ``status.active`` lists the unfinished Jobs (``SawCompletedJob`` when one
  finishes), ``lastScheduleTime`` and ``lastSuccessfulTime``; finished Jobs
  beyond ``successfulJobsHistoryLimit`` (3) and ``failedJobsHistoryLimit`` (1)
  are deleted, oldest first.
- The next sync is queued for the next scheduled time.

Concurrency: ``concurrent_cron_job_syncs`` workers keyed by CronJob.
"""

from __future__ import annotations

import datetime as dt
import logging
import zoneinfo
from collections.abc import Sequence
from typing import Any, Final

from croniter import croniter
from kubernetes.client import V1CronJob, V1Job

from controller_manager.context import ControllerContext
from controller_manager.podcontrol import owner_reference
from controller_manager.podutil import controller_of
from machinery.api.kinds import CRON_JOBS, JOBS, ObjectKey, object_key
from machinery.api.meta import format_time, parse_time, utcnow
from machinery.client.errors import AlreadyExists, ApiError, NotFound
from machinery.client.objects import key_of, meta_of, to_wire
from machinery.controller import Controller
from machinery.events import NORMAL, WARNING
from machinery.informer.shared import DeletedFinalStateUnknown
from machinery.informer.store import OWNER_UID_INDEX, index_by_owner_uid

log = logging.getLogger(__name__)

NAME: Final = "cronjob-controller"
ALIASES: Final = ("cronjob",)
EVENT_SOURCE: Final = "cronjob-controller"
SCHEDULED_TIMESTAMP: Final = "batch.kubernetes.io/cronjob-scheduled-timestamp"
MAX_MISSED: Final = 100
DEFAULT_SUCCESSFUL_HISTORY: Final = 3
DEFAULT_FAILED_HISTORY: Final = 1


class CronJobController(Controller):
    def __init__(self, ctx: ControllerContext) -> None:
        self._cronjobs = ctx.informers.informer(CRON_JOBS)
        self._jobs = ctx.informers.informer(JOBS, indexers={OWNER_UID_INDEX: index_by_owner_uid})
        super().__init__("cronjob", informers=[self._cronjobs, self._jobs],
                         workers=ctx.options.concurrent_cron_job_syncs, clock=ctx.clock)
        self._client = ctx.client
        self._recorder = ctx.events.recorder(EVENT_SOURCE)
        self._is_leading = ctx.is_leading
        self._cronjobs.add_handler(on_add=self.enqueue, on_update=lambda _o, n: self.enqueue(n),
                                   on_delete=self.enqueue)
        self._jobs.add_handler(on_add=self._job_changed, on_update=lambda _o, n: self._job_changed(n),
                               on_delete=self._job_deleted)

    def _job_changed(self, job: V1Job) -> None:
        ref = controller_of(meta_of(job))
        if ref is not None and ref.kind == CRON_JOBS.kind:
            self.queue.add(object_key(meta_of(job).namespace, ref.name))

    def _job_deleted(self, obj: V1Job | DeletedFinalStateUnknown[V1Job]) -> None:
        self._job_changed(obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj)

    async def sync(self, key: ObjectKey) -> None:
        cj = self._cronjobs.store.get(key)
        if cj is None or not self._is_leading():
            return
        uid = meta_of(cj).uid or ""
        jobs = [j for j in self._jobs.store.by_index(OWNER_UID_INDEX, uid)
                if (ref := controller_of(meta_of(j))) is not None and ref.uid == uid]
        status = to_wire(cj.status) if cj.status is not None else {}
        changed = self._sync_active(cj, jobs, status)
        now = utcnow()
        requeue: float | None = None
        if meta_of(cj).deletion_timestamp is None:
            try:
                schedule = Schedule(cj)
            except ValueError as err:
                self._recorder.event(cj, WARNING, "UnparseableSchedule", f"unparseable schedule: "
                                     f"{cj.spec.schedule if cj.spec else ''!r} : {err}")
                schedule = None
            if schedule is not None:
                made, requeue = await self._maybe_run(cj, jobs, status, schedule, now)
                changed = changed or made
        if await self._cleanup_history(cj, jobs):
            changed = True
        if changed or status != (to_wire(cj.status) if cj.status is not None else {}):
            body = to_wire(cj)
            body["status"] = status
            await self._client.update_status(CRON_JOBS, body)
        if requeue is not None:
            self.queue.add_after(key, requeue)

    def _sync_active(self, cj: V1CronJob, jobs: Sequence[V1Job], status: dict[str, Any]) -> bool:
        """Finished Jobs leave ``status.active``, unfinished ones of ours join it."""
        active: list[dict[str, Any]] = list(status.get("active") or ())
        by_uid = {meta_of(j).uid: j for j in jobs}
        changed = False
        kept = []
        for ref in active:
            job = by_uid.get(ref.get("uid"))
            if job is None:
                changed = True
                continue
            finished = finished_condition(job)
            if finished is not None:
                self._recorder.event(cj, NORMAL, "SawCompletedJob",
                                     f"Saw completed job: {meta_of(job).name}, condition: {finished}")
                changed = True
                continue
            kept.append(ref)
        listed = {r.get("uid") for r in kept}
        for job in jobs:
            if meta_of(job).uid not in listed and finished_condition(job) is None and \
                    meta_of(job).deletion_timestamp is None:
                kept.append(_job_reference(job))
                changed = True
        successful = [parse_time(j.status.completion_time) for j in jobs
                      if finished_condition(j) == "Complete" and j.status is not None and j.status.completion_time]
        latest = max((t for t in successful if t is not None), default=None)
        current = parse_time(status.get("lastSuccessfulTime"))
        if latest is not None and (current is None or latest > current):
            status["lastSuccessfulTime"] = format_time(latest)
            changed = True
        if kept:
            status["active"] = kept
        else:
            status.pop("active", None)
        return changed

    async def _maybe_run(self, cj: V1CronJob, jobs: Sequence[V1Job], status: dict[str, Any],
                         schedule: Schedule, now: dt.datetime) -> tuple[bool, float | None]:
        spec = cj.spec
        assert spec is not None
        earliest = parse_time(status.get("lastScheduleTime")) or meta_of(cj).creation_timestamp or now
        deadline = spec.starting_deadline_seconds
        if deadline is not None:
            window = now - dt.timedelta(seconds=deadline)
            earliest = max(earliest, window)
        scheduled, missed = schedule.most_recent(earliest, now)
        next_run = (schedule.next_after(now) - now).total_seconds() + 0.1
        if missed > MAX_MISSED:
            self._recorder.event(cj, WARNING, "TooManyMissedTimes",
                                 "too many missed start times. Set or decrease .spec.startingDeadlineSeconds "
                                 "or check clock skew")
        if scheduled is None or spec.suspend:
            return False, next_run
        if deadline is not None and scheduled < now - dt.timedelta(seconds=deadline):
            self._recorder.event(cj, WARNING, "MissSchedule",
                                 f"Missed scheduled time to start a job: {format_time(scheduled)}")
            return False, next_run
        active = [r for r in status.get("active") or ()]
        policy = spec.concurrency_policy or "Allow"
        if policy == "Forbid" and active:
            log.debug("cronjob %s: not starting a Job for %s, one is still active", key_of(cj), scheduled)
            return False, next_run
        if policy == "Replace":
            for ref in active:
                try:
                    await self._client.delete(JOBS, ref.get("name", ""), namespace=meta_of(cj).namespace,
                                              propagation_policy="Background")
                except NotFound:
                    pass
                self._recorder.event(cj, NORMAL, "SuccessfulDelete", f"Deleted job {ref.get('name')}")
            status.pop("active", None)
        job = await self._create_job(cj, scheduled, schedule)
        if job is not None and finished_condition(job) is None:
            refs = [r for r in status.get("active") or () if r.get("uid") != meta_of(job).uid]
            status["active"] = [*refs, _job_reference(job)]
        status["lastScheduleTime"] = format_time(scheduled)
        return True, next_run

    async def _create_job(self, cj: V1CronJob, scheduled: dt.datetime, schedule: Schedule) -> V1Job | None:
        meta = meta_of(cj)
        template = to_wire(cj.spec.job_template) if cj.spec is not None and cj.spec.job_template else {}
        template_meta = template.get("metadata") or {}
        name = job_name(meta.name or "", scheduled)
        body = {"apiVersion": JOBS.api_version, "kind": JOBS.kind,
                "metadata": {"name": name, "namespace": meta.namespace,
                             "labels": dict(template_meta.get("labels") or {}),
                             "annotations": {**(template_meta.get("annotations") or {}),
                                             SCHEDULED_TIMESTAMP: rfc3339(schedule.local(scheduled))},
                             "ownerReferences": [owner_reference(cj, CRON_JOBS)]},
                "spec": template.get("spec") or {}}
        try:
            job = await self._client.create(JOBS, body)
        except AlreadyExists:
            try:
                existing = await self._client.get(JOBS, name, namespace=meta.namespace)
            except NotFound:
                return None
            ref = controller_of(meta_of(existing))
            return existing if ref is not None and ref.uid == meta.uid else None
        except ApiError as err:
            self._recorder.event(cj, WARNING, "FailedCreate", f"Error creating job: {err}")
            raise
        self._recorder.event(cj, NORMAL, "SuccessfulCreate", f"Created job {name}")
        log.info("cronjob %s: created Job %s for %s", key_of(cj), name, format_time(scheduled))
        return job

    async def _cleanup_history(self, cj: V1CronJob, jobs: Sequence[V1Job]) -> bool:
        spec = cj.spec
        limits = {
            "Complete": DEFAULT_SUCCESSFUL_HISTORY if spec is None or spec.successful_jobs_history_limit is None
            else spec.successful_jobs_history_limit,
            "Failed": DEFAULT_FAILED_HISTORY if spec is None or spec.failed_jobs_history_limit is None
            else spec.failed_jobs_history_limit,
        }
        deleted = False
        for kind, limit in limits.items():
            finished = [j for j in jobs if finished_condition(j) == kind and meta_of(j).deletion_timestamp is None]
            finished.sort(key=lambda j: (j.status.start_time if j.status is not None and j.status.start_time
                                         else meta_of(j).creation_timestamp) or utcnow())
            for job in finished[:max(len(finished) - limit, 0)]:
                try:
                    await self._client.delete(JOBS, meta_of(job).name or "", namespace=meta_of(job).namespace,
                                              propagation_policy="Background")
                except NotFound:
                    continue
                self._recorder.event(cj, NORMAL, "SuccessfulDelete", f"Deleted job {meta_of(job).name}")
                deleted = True
        return deleted


class Schedule:
    """A CronJob's schedule in its time zone."""

    def __init__(self, cj: V1CronJob) -> None:
        spec = cj.spec
        text = (spec.schedule if spec is not None else None) or ""
        zone_name = spec.time_zone if spec is not None else None
        for prefix in ("CRON_TZ=", "TZ="):
            if text.startswith(prefix):
                zone_name, _, text = text[len(prefix):].partition(" ")
        try:
            self.zone: dt.tzinfo = zoneinfo.ZoneInfo(zone_name) if zone_name else dt.UTC
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {zone_name}") from None
        self.text = text.strip()
        if not croniter.is_valid(self.text):
            raise ValueError("expected exactly 5 fields or a descriptor")

    def local(self, t: dt.datetime) -> dt.datetime:
        return t.astimezone(self.zone)

    def next_after(self, t: dt.datetime) -> dt.datetime:
        nxt: dt.datetime = croniter(self.text, self.local(t)).get_next(dt.datetime)
        return nxt.astimezone(dt.UTC)

    def most_recent(self, earliest: dt.datetime, now: dt.datetime) -> tuple[dt.datetime | None, int]:
        """The latest scheduled time in (earliest, now], and how many there were (capped past 100)."""
        it = croniter(self.text, self.local(earliest))
        latest: dt.datetime | None = None
        count = 0
        while True:
            t: dt.datetime = it.get_next(dt.datetime).astimezone(dt.UTC)
            if t > now:
                break
            latest = t
            count += 1
            if count > MAX_MISSED:
                # Too many to walk: the latest is the previous scheduled time before now.
                previous: dt.datetime = croniter(self.text, self.local(now)).get_prev(dt.datetime)
                return previous.astimezone(dt.UTC), count
        return latest, count


def rfc3339(t: dt.datetime) -> str:
    """Go's ``time.RFC3339``: ``Z`` for UTC, else the offset (``+09:00``), no fractions."""
    text = t.replace(microsecond=0).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def job_name(cronjob: str, scheduled: dt.datetime) -> str:
    """``getJobName``: the scheduled time in minutes since the epoch makes the name unique per run."""
    return f"{cronjob}-{int(scheduled.timestamp()) // 60}"


def finished_condition(job: V1Job) -> str | None:
    for condition in (job.status.conditions if job.status is not None else None) or ():
        if condition.type in ("Complete", "Failed") and condition.status == "True":
            return str(condition.type)
    return None


def _job_reference(job: V1Job) -> dict[str, Any]:
    meta = meta_of(job)
    return {"apiVersion": JOBS.api_version, "kind": JOBS.kind, "name": meta.name, "namespace": meta.namespace,
            "uid": meta.uid, "resourceVersion": meta.resource_version}
