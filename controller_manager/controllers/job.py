"""The Job controller: Pods run to completion, counted exactly once, within the Job's limits.

Kubernetes' ``pkg/controller/job`` as of 1.32:

- **Pods.** Up to ``parallelism`` at once, until ``completions`` succeeded
  (or, without ``completions``, until one succeeded and the rest finished).
  ``Indexed`` Jobs give each Pod an index 0..completions-1: the
  ``batch.kubernetes.io/job-completion-index`` annotation and label, the
  ``JOB_COMPLETION_INDEX`` variable, the hostname ``<job>-<index>``, the
  name ``<job>-<index>-xxxxx``; ``status.completedIndexes`` lists them
  ("0-2,4"). Pods carry the Job's labels and the
  ``batch.kubernetes.io/job-tracking`` finalizer.
- **Counting.** A finished Pod's uid first goes to
  ``status.uncountedTerminatedPods`` (written), then its finalizer is
  removed, then it moves to ``succeeded`` or ``failed`` (written): a Pod is
  counted once even if the controller restarts in between or the Pod is
  deleted at once. Pods the controller deletes itself (suspension, too many)
  lose the finalizer first and are not counted.
- **Failures.** ``backoffLimit`` (default 6; with ``restartPolicy: OnFailure``
  container restarts count too), replacements delayed 10 s doubling to
  10 min, ``backoffLimitPerIndex`` and ``maxFailedIndexes`` for Indexed Jobs,
  ``activeDeadlineSeconds``, and ``podFailurePolicy`` (FailJob, FailIndex,
  Ignore, Count on exit codes or Pod conditions).
- **Conditions**, as with 1.32's defaults (terminal conditions wait for the
  Pods to be gone): ``FailureTarget`` (BackoffLimitExceeded, DeadlineExceeded,
  PodFailurePolicy, MaxFailedIndexesExceeded, FailedIndexes) then
  ``Failed``; ``SuccessCriteriaMet`` (CompletionsReached) then ``Complete``
  with ``completionTime``; ``Suspended`` (JobSuspended, JobResumed).
- **Suspend** deletes the active Pods; resuming resets ``startTime``.

Concurrency: ``concurrent_job_syncs`` workers, never two on one Job; handlers
update expectations and enqueue. Status writes that conflict fail the sync,
which is retried on the fresh object.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Sequence
from typing import Any, Final

import httpx
from kubernetes.client import V1Job, V1Pod

from controller_manager import jobutil as ju
from controller_manager.context import ControllerContext
from controller_manager.controllerref import claim
from controller_manager.expectations import Expectations
from controller_manager.podcontrol import (
    NAMESPACE_TERMINATING_CAUSE,
    SLOW_START_INITIAL_BATCH_SIZE,
    outcomes,
    pod_from_template,
    slow_start_batch,
)
from controller_manager.podutil import controller_of, is_pod_ready
from machinery.api.kinds import JOBS, PODS, ObjectKey, object_key
from machinery.api.labels import Selector, selector_from_set
from machinery.api.meta import format_time, parse_time, utcnow
from machinery.client.errors import ApiError, NotFound
from machinery.client.objects import key_of, meta_of, to_wire
from machinery.client.rest import PatchType
from machinery.controller import Controller
from machinery.events import NORMAL, WARNING
from machinery.informer.shared import DeletedFinalStateUnknown
from machinery.informer.store import NAMESPACE_INDEX, OWNER_UID_INDEX, index_by_namespace, index_by_owner_uid

log = logging.getLogger(__name__)

NAME: Final = "job-controller"
ALIASES: Final = ("job",)
EVENT_SOURCE: Final = "job-controller"

COMPLETE: Final = "Complete"
FAILED: Final = "Failed"
FAILURE_TARGET: Final = "FailureTarget"
SUCCESS_CRITERIA_MET: Final = "SuccessCriteriaMet"
SUSPENDED: Final = "Suspended"
BACKOFF_LIMIT_EXCEEDED: Final = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE_EXCEEDED: Final = ("DeadlineExceeded", "Job was active longer than specified deadline")
MAX_FAILED_INDEXES_EXCEEDED: Final = ("MaxFailedIndexesExceeded",
                                      "Job has exceeded the specified maximal number of failed indexes")
FAILED_INDEXES: Final = ("FailedIndexes", "Job has failed indexes")
COMPLETIONS_REACHED: Final = ("CompletionsReached", "Reached expected number of succeeded pods")
#: Pod writes in flight at once, over all Jobs.
MAX_IN_FLIGHT_WRITES: Final = 32


class JobController(Controller):
    """Runs every Job's Pods to completion."""

    def __init__(self, ctx: ControllerContext) -> None:
        self._jobs = ctx.informers.informer(JOBS, indexers={NAMESPACE_INDEX: index_by_namespace})
        self._pods = ctx.informers.informer(PODS, indexers={OWNER_UID_INDEX: index_by_owner_uid,
                                                            NAMESPACE_INDEX: index_by_namespace})
        super().__init__("job", informers=[self._jobs, self._pods], workers=ctx.options.concurrent_job_syncs,
                         clock=ctx.clock)
        self._client = ctx.client
        self._clock = ctx.clock
        self._recorder = ctx.events.recorder(EVENT_SOURCE)
        self._is_leading = ctx.is_leading
        self.expectations = Expectations(clock=ctx.clock)
        #: Pods whose finalizer this controller removed, until the informer shows it gone (by Job key).
        self._finalizer_removed: dict[str, set[str]] = {}
        #: When each Job last saw a counted failure (for the replacement back-off).
        self._last_failure: dict[str, dt.datetime] = {}
        self._writes = asyncio.Semaphore(MAX_IN_FLIGHT_WRITES)
        self._jobs.add_handler(on_add=self.enqueue, on_update=self._job_updated, on_delete=self._job_deleted)
        self._pods.add_handler(on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_deleted)

    # --- handlers ------------------------------------------------------------------------------

    def _job_updated(self, old: V1Job, new: V1Job) -> None:
        if meta_of(old).uid != meta_of(new).uid:
            self._forget(key_of(old))
        self.enqueue(new)

    def _job_deleted(self, obj: V1Job | DeletedFinalStateUnknown[V1Job]) -> None:
        job = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self._forget(key_of(job))
        # Its Pods still carry the finalizer: the sync of a gone Job removes them.
        self.enqueue(obj)

    def _forget(self, key: str) -> None:
        self.expectations.delete(key)
        self._finalizer_removed.pop(key, None)
        self._last_failure.pop(key, None)

    def _job_of(self, pod: V1Pod) -> V1Job | None:
        ref = controller_of(meta_of(pod))
        if ref is None or ref.kind != JOBS.kind:
            return None
        job = self._jobs.store.get(object_key(meta_of(pod).namespace, ref.name))
        return job if job is not None and meta_of(job).uid == ref.uid else None

    def _pod_added(self, pod: V1Pod) -> None:
        job = self._job_of(pod)
        if job is not None:
            if meta_of(pod).deletion_timestamp is None:
                self.expectations.creation_observed(key_of(job))
            self.enqueue(job)

    def _pod_updated(self, old: V1Pod, new: V1Pod) -> None:
        if meta_of(old).resource_version == meta_of(new).resource_version:
            return
        job = self._job_of(new) or self._job_of(old)
        if job is None:
            return
        key = key_of(job)
        if ju.TRACKING_FINALIZER not in (meta_of(new).finalizers or ()):
            self._finalizer_removed.get(key, set()).discard(meta_of(new).uid or "")
        if meta_of(new).deletion_timestamp is not None and meta_of(old).deletion_timestamp is None:
            self.expectations.deletion_observed(key, _pod_key(new))
        self.enqueue(job)

    def _pod_deleted(self, obj: V1Pod | DeletedFinalStateUnknown[V1Pod]) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        ref = controller_of(meta_of(pod))
        if ref is None or ref.kind != JOBS.kind:
            return
        key = object_key(meta_of(pod).namespace, ref.name)
        self._finalizer_removed.get(key, set()).discard(meta_of(pod).uid or "")
        self.expectations.deletion_observed(key, _pod_key(pod))
        self.queue.add(key)

    # --- sync ----------------------------------------------------------------------------------

    async def sync(self, key: ObjectKey) -> None:
        if not self._is_leading():
            return
        job = self._jobs.store.get(key)
        if job is None:
            await self._release_orphaned_pods(key)
            self._forget(key)
            return
        namespace = meta_of(job).namespace or ""
        candidates = [p for p in self._pods.store.by_index(NAMESPACE_INDEX, namespace)]
        pods = await claim(self._client, job, JOBS, PODS, job_selector(job), candidates,
                           filter=lambda p: not ju.is_finished(p, job))
        conditions = [to_wire(c) for c in (job.status.conditions if job.status is not None else None) or ()]
        if _is_true(conditions, COMPLETE) or _is_true(conditions, FAILED):
            await self._remove_finalizers(job, [p for p in pods if _tracked(p)])
            return
        await _Sync(self, job, key, pods, conditions).run()

    async def _release_orphaned_pods(self, key: ObjectKey) -> None:
        """A deleted Job's Pods must not keep its finalizer, or they would never go."""
        namespace, _, name = key.partition("/")
        stale = [p for p in self._pods.store.by_index(NAMESPACE_INDEX, namespace)
                 if _tracked(p) and (ref := controller_of(meta_of(p))) is not None and ref.kind == JOBS.kind
                 and ref.name == name]
        await self._remove_finalizers(None, stale)

    async def _remove_finalizers(self, job: V1Job | None, pods: Sequence[V1Pod]) -> None:
        patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [ju.TRACKING_FINALIZER]}}

        async def remove(pod: V1Pod) -> None:
            async with self._writes:
                try:
                    await self._client.patch(PODS, meta_of(pod).name or "", patch, namespace=meta_of(pod).namespace,
                                             patch_type=PatchType.STRATEGIC_MERGE)
                except NotFound:
                    pass
        results = await outcomes(remove(p) for p in pods)
        errors = [e for e in results if e is not None]
        if job is not None:
            removed = self._finalizer_removed.setdefault(key_of(job), set())
            removed.update(meta_of(p).uid or "" for p, e in zip(pods, results, strict=True) if e is None)
        if errors:
            raise errors[0]


class _Sync:
    """One sync of one Job: the state read once, the decisions, the writes."""

    def __init__(self, controller: JobController, job: V1Job, key: ObjectKey, pods: list[V1Pod],
                 conditions: list[dict[str, Any]]) -> None:
        self.c = controller
        self.job = job
        self.key = key
        self.pods = pods
        self.conditions = conditions
        self.now = utcnow()
        status = to_wire(job.status) if job.status is not None else {}
        self.status: dict[str, Any] = status
        uncounted = status.get("uncountedTerminatedPods") or {}
        self.uncounted_succeeded: list[str] = list(uncounted.get("succeeded") or ())
        self.uncounted_failed: list[str] = list(uncounted.get("failed") or ())
        self.succeeded: int = status.get("succeeded") or 0
        self.failed: int = status.get("failed") or 0
        total = ju.completions(job)
        self.completed = ju.parse_intervals(status.get("completedIndexes"), total)
        self.failed_indexes = ju.parse_intervals(status.get("failedIndexes"), total)
        self.failure: tuple[str, str] | None = None

    async def run(self) -> None:
        job, c = self.job, self.c
        await self._track_finished()
        active = [p for p in self.pods if not ju.is_finished(p, job) and meta_of(p).deletion_timestamp is None]
        terminating = [p for p in self.pods if meta_of(p).deletion_timestamp is not None
                       and (p.status is None or p.status.phase not in ("Succeeded", "Failed"))]
        target = _get(self.conditions, FAILURE_TARGET) or _get(self.conditions, SUCCESS_CRITERIA_MET)
        if target is None or target.get("status") != "True":
            self._check_terminal(active)
        target = _get(self.conditions, FAILURE_TARGET) or _get(self.conditions, SUCCESS_CRITERIA_MET)
        if target is not None and target.get("status") == "True":
            if active:
                await self._delete(active, "the Job is finishing")
            lingering = [p for p in self.pods if _tracked(p) or p in terminating]
            if not active and not lingering and not self.uncounted_succeeded and not self.uncounted_failed:
                terminal = COMPLETE if target["type"] == SUCCESS_CRITERIA_MET else FAILED
                _set(self.conditions, terminal, "True", target.get("reason", ""), target.get("message", ""),
                     self.now)
                if terminal == COMPLETE:
                    self.status["completionTime"] = format_time(self.now)
                await self._write(active=[], terminating=terminating)
                # Reported once the condition is stored: a conflict retries the sync, not the Event.
                if terminal == COMPLETE:
                    c._recorder.event(job, NORMAL, "Completed", "Job completed")
                else:
                    c._recorder.event(job, WARNING, target.get("reason", ""), target.get("message", ""))
                log.info("job %s: %s (%s)", self.key, terminal, target.get("reason"))
                return
            await self._write(active=[], terminating=terminating)
            return
        if ju.suspended(job):
            if active:
                await self._delete(active, "the Job is suspended")
            if not _is_true(self.conditions, SUSPENDED):
                _set(self.conditions, SUSPENDED, "True", "JobSuspended", "Job suspended", self.now)
                c._recorder.event(job, NORMAL, "Suspended", "Job suspended")
            await self._write(active=[], terminating=terminating)
            return
        if _is_true(self.conditions, SUSPENDED):
            _set(self.conditions, SUSPENDED, "False", "JobResumed", "Job resumed", self.now)
            c._recorder.event(job, NORMAL, "Resumed", "Job resumed")
            self.status["startTime"] = format_time(self.now)
        if not self.status.get("startTime"):
            self.status["startTime"] = format_time(self.now)
        deadline = job.spec.active_deadline_seconds if job.spec is not None else None
        if deadline is not None:
            started = parse_time(self.status["startTime"]) or self.now
            remaining = (started - self.now).total_seconds() + deadline
            c.queue.add_after(self.key, max(remaining, 0.0) + 0.5)
        error: BaseException | None = None
        if c.expectations.satisfied(self.key):
            try:
                active = await self._manage(active, terminating)
            except (ApiError, httpx.TransportError) as err:
                error = err
        await self._write(active=active, terminating=terminating)
        if error is not None:
            raise error

    # --- counting finished Pods ------------------------------------------------------------------

    async def _track_finished(self) -> None:
        """Move finished Pods to uncounted (written), remove their finalizers, then count them."""
        job, c = self.job, self.c
        removed = c._finalizer_removed.get(self.key, set())
        uncounted = set(self.uncounted_succeeded) | set(self.uncounted_failed)
        to_release: list[V1Pod] = []
        added = False
        for pod in self.pods:
            uid = meta_of(pod).uid or ""
            if not _tracked(pod) or uid in removed or not ju.is_finished(pod, job):
                continue
            to_release.append(pod)
            if uid in uncounted:
                continue
            if pod.status is not None and pod.status.phase == "Succeeded":
                index = ju.pod_index(pod)
                if ju.indexed(job) and (index is None or index >= (ju.completions(job) or 0)
                                        or index in self.completed):
                    continue
                self.uncounted_succeeded.append(uid)
                added = True
                continue
            action, message = ju.match_pod_failure_policy(job, pod)
            if action == "Ignore":
                continue
            if action == "FailJob" and self.failure is None:
                self.failure = ("PodFailurePolicy", message)
            index = ju.pod_index(pod)
            if ju.indexed(job) and index is not None:
                per_index = job.spec.backoff_limit_per_index if job.spec is not None else None
                if action == "FailIndex" or (per_index is not None and _index_failures(pod) + 1 > per_index):
                    self.failed_indexes.add(index)
            self.uncounted_failed.append(uid)
            c._last_failure[self.key] = max(c._last_failure.get(self.key, self.now - dt.timedelta(days=1)),
                                            ju.finish_time(pod) or self.now)
            added = True
        if added:
            await self._write_status(self._status_body(active=None, terminating=None))
        if to_release:
            await c._remove_finalizers(job, to_release)
        by_uid = {meta_of(p).uid: p for p in self.pods}
        for uid in self.uncounted_succeeded:
            self.succeeded += 1
            found = by_uid.get(uid)
            index = ju.pod_index(found) if found is not None else None
            if ju.indexed(self.job) and index is not None:
                self.completed.add(index)
        self.failed += len(self.uncounted_failed)
        self.uncounted_succeeded, self.uncounted_failed = [], []
        if ju.indexed(self.job):
            self.succeeded = len(self.completed)

    # --- deciding the end ------------------------------------------------------------------------

    def _check_terminal(self, active: Sequence[V1Pod]) -> None:
        job = self.job
        spec = job.spec
        total = ju.completions(job)
        per_index = spec.backoff_limit_per_index if spec is not None else None
        restarts = 0
        if spec is not None and spec.template is not None and spec.template.spec is not None \
                and spec.template.spec.restart_policy == "OnFailure":
            restarts = sum(s.restart_count for p in active
                           for s in (p.status.container_statuses if p.status is not None else None) or ())
        started = parse_time(self.status.get("startTime"))
        deadline = spec.active_deadline_seconds if spec is not None else None
        failure: tuple[str, str] | None = self.failure
        if failure is None and per_index is None and (self.failed > ju.backoff_limit(job)
                                                      or (restarts and self.failed + restarts > ju.backoff_limit(job))):
            failure = BACKOFF_LIMIT_EXCEEDED
        if failure is None and deadline is not None and started is not None and not ju.suspended(job) \
                and (self.now - started).total_seconds() >= deadline:
            failure = DEADLINE_EXCEEDED
        max_failed = spec.max_failed_indexes if spec is not None else None
        if failure is None and per_index is not None and max_failed is not None \
                and len(self.failed_indexes) > max_failed:
            failure = MAX_FAILED_INDEXES_EXCEEDED
        if failure is not None:
            _set(self.conditions, FAILURE_TARGET, "True", failure[0], failure[1], self.now)
            return
        if ju.indexed(job):
            done = total is not None and len(self.completed | self.failed_indexes) >= total
            if done and self.failed_indexes:
                _set(self.conditions, FAILURE_TARGET, "True", *FAILED_INDEXES, self.now)
            elif done:
                _set(self.conditions, SUCCESS_CRITERIA_MET, "True", *COMPLETIONS_REACHED, self.now)
            return
        if (total is not None and self.succeeded >= total) or (total is None and self.succeeded > 0 and not active):
            _set(self.conditions, SUCCESS_CRITERIA_MET, "True", *COMPLETIONS_REACHED, self.now)

    # --- managing Pods ---------------------------------------------------------------------------

    async def _manage(self, active: list[V1Pod], terminating: list[V1Pod]) -> list[V1Pod]:
        job = self.job
        busy = len(active) + (len(terminating) if ju.replace_only_failed(job) else 0)
        total = ju.completions(job)
        if ju.indexed(job):
            return await self._manage_indexed(active, busy, total or 0)
        if total is None:
            want = len(active) if self.succeeded > 0 else ju.parallelism(job)
        else:
            want = max(min(ju.parallelism(job), total - self.succeeded), 0)
        if busy > want:
            excess = sorted(active, key=_deletion_order)[: busy - want]
            await self._delete(excess, "too many active Pods")
            return [p for p in active if p not in excess]
        if busy < want:
            await self._create([None] * (want - busy))
        return active

    async def _manage_indexed(self, active: list[V1Pod], busy: int, total: int) -> list[V1Pod]:
        by_index: dict[int, list[V1Pod]] = {}
        excess: list[V1Pod] = []
        for pod in active:
            index = ju.pod_index(pod)
            if index is None or index >= total or index in self.completed or index in self.failed_indexes:
                excess.append(pod)
            else:
                by_index.setdefault(index, []).append(pod)
        for pods in by_index.values():
            pods.sort(key=lambda p: (not is_pod_ready(p), meta_of(p).creation_timestamp or self.now))
            excess.extend(pods[1:])
        parallel = ju.parallelism(self.job)
        keep = sorted(by_index)
        if len(keep) > parallel:
            excess.extend(by_index[i][0] for i in keep[parallel:])
            keep = keep[:parallel]
        if excess:
            await self._delete(excess, "too many active Pods")
        active = [by_index[i][0] for i in keep]
        capacity = parallel - len(active) - (busy - len(active) - len(excess) if busy > len(active) else 0)
        running = set(keep) | {i for p in self.pods if meta_of(p).deletion_timestamp is not None
                               and ju.replace_only_failed(self.job) and (i := ju.pod_index(p)) is not None}
        pending = [i for i in range(total) if i not in self.completed and i not in self.failed_indexes
                   and i not in running]
        if capacity > 0 and pending:
            await self._create(list(pending[:capacity]))
        return active

    def _backoff_remaining(self) -> float:
        if self.failed == 0:
            return 0.0
        last = self.c._last_failure.get(self.key)
        if last is None:
            return 0.0
        return (last - self.now).total_seconds() + ju.backoff_delay(self.failed)

    async def _create(self, indexes: list[int | None]) -> None:
        c, job = self.c, self.job
        wait = self._backoff_remaining()
        if wait > 0:
            log.debug("job %s: backing off %.1fs before creating Pods", self.key, wait)
            c.queue.add_after(self.key, wait)
            return
        c.expectations.expect_creations(self.key, len(indexes))
        pending = list(indexes)

        async def create_one() -> None:
            index = pending.pop(0)
            body = self._pod(index)
            try:
                async with c._writes:
                    pod = await c._client.create(PODS, body, namespace=meta_of(job).namespace)
            except (ApiError, httpx.TransportError) as err:
                if isinstance(err, ApiError) and err.has_cause(NAMESPACE_TERMINATING_CAUSE):
                    return
                c._recorder.event(job, WARNING, "FailedCreate", f"Error creating: {err}")
                raise
            c._recorder.event(job, NORMAL, "SuccessfulCreate", f"Created pod: {meta_of(pod).name}")

        created, error = await slow_start_batch(len(indexes), SLOW_START_INITIAL_BATCH_SIZE, create_one,
                                                c._is_leading)
        for _ in range(len(indexes) - created):
            c.expectations.creation_observed(self.key)
        if error is not None:
            raise error

    def _pod(self, index: int | None) -> dict[str, Any]:
        job = self.job
        meta = meta_of(job)
        template = job.spec.template if job.spec is not None else None
        body = pod_from_template(template, job, JOBS)
        pod_meta = body["metadata"]
        labels = pod_meta.setdefault("labels", {})
        for label, value in ((ju.CONTROLLER_UID_LABEL, meta.uid), (ju.JOB_NAME_LABEL, meta.name),
                             (ju.LEGACY_CONTROLLER_UID_LABEL, meta.uid), (ju.LEGACY_JOB_NAME_LABEL, meta.name)):
            labels.setdefault(label, value)
        finalizers = pod_meta.setdefault("finalizers", [])
        if ju.TRACKING_FINALIZER not in finalizers:
            finalizers.append(ju.TRACKING_FINALIZER)
        if index is not None:
            pod_meta["generateName"] = f"{meta.name}-{index}-"
            pod_meta.setdefault("annotations", {})[ju.COMPLETION_INDEX] = str(index)
            labels[ju.COMPLETION_INDEX] = str(index)
            failures = self._index_failures(index)
            if failures:
                pod_meta["annotations"][ju.INDEX_FAILURE_COUNT] = str(failures)
            spec = body["spec"]
            spec["hostname"] = f"{meta.name}-{index}"
            env = {"name": ju.INDEX_ENV, "valueFrom": {"fieldRef": {
                "fieldPath": f"metadata.annotations['{ju.COMPLETION_INDEX}']"}}}
            for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
                variables = container.setdefault("env", [])
                if not any(v.get("name") == ju.INDEX_ENV for v in variables):
                    variables.append(env)
        return body

    def _index_failures(self, index: int) -> int:
        """How many Pods of this index failed so far (the replacement's ``job-index-failure-count``)."""
        failures = 0
        for pod in self.pods:
            if ju.pod_index(pod) == index and ju.is_pod_failed(pod, self.job):
                failures = max(failures, _index_failures(pod) + 1)
        return failures

    async def _delete(self, pods: Sequence[V1Pod], why: str) -> None:
        """Delete Pods the controller no longer wants; they lose the finalizer first and are not counted."""
        c = self.c
        tracked = [p for p in pods if _tracked(p)]
        if tracked:
            await c._remove_finalizers(self.job, tracked)
        c.expectations.expect_deletions(self.key, [_pod_key(p) for p in pods])

        async def delete(pod: V1Pod) -> None:
            async with c._writes:
                await c._client.delete(PODS, meta_of(pod).name or "", namespace=meta_of(pod).namespace)
            c._recorder.event(self.job, NORMAL, "SuccessfulDelete", f"Deleted pod: {meta_of(pod).name}")
        results = await outcomes(delete(p) for p in pods)
        errors = []
        for pod, result in zip(pods, results, strict=True):
            if result is not None:
                c.expectations.deletion_observed(self.key, _pod_key(pod))
                if not isinstance(result, NotFound):
                    errors.append(result)
        log.debug("job %s: deleted %d Pods (%s)", self.key, len(pods) - len(errors), why)
        if errors:
            raise errors[0]

    # --- status ----------------------------------------------------------------------------------

    def _status_body(self, *, active: Sequence[V1Pod] | None, terminating: Sequence[V1Pod] | None,
                     ) -> dict[str, Any]:
        status = dict(self.status)
        status["uncountedTerminatedPods"] = {k: v for k, v in (("succeeded", self.uncounted_succeeded),
                                                               ("failed", self.uncounted_failed)) if v}
        status["succeeded"] = self.succeeded
        status["failed"] = self.failed
        if active is not None:
            status["active"] = len(active)
            status["ready"] = sum(1 for p in active if is_pod_ready(p))
        if terminating is not None:
            status["terminating"] = len(terminating)
        if ju.indexed(self.job):
            status["completedIndexes"] = ju.format_intervals(self.completed)
            if self.job.spec is not None and self.job.spec.backoff_limit_per_index is not None:
                status["failedIndexes"] = ju.format_intervals(self.failed_indexes)
        status["conditions"] = self.conditions
        for field in ("active", "succeeded", "failed"):
            if not status.get(field):
                status.pop(field, None)
        if not status["conditions"]:
            del status["conditions"]
        return status

    async def _write(self, *, active: Sequence[V1Pod], terminating: Sequence[V1Pod]) -> None:
        status = self._status_body(active=active, terminating=terminating)
        current = to_wire(self.job.status) if self.job.status is not None else {}
        if status != current:
            await self._write_status(status)

    async def _write_status(self, status: dict[str, Any]) -> None:
        body = to_wire(self.job)
        body["status"] = status
        self.job = await self.c._client.update_status(JOBS, body)
        self.status = to_wire(self.job.status) if self.job.status is not None else {}


def job_selector(job: V1Job) -> Selector:
    """``spec.selector``, or (before the APIServer defaults it) the Job's controller-uid label."""
    selector = job.spec.selector if job.spec is not None else None
    if selector is not None:
        return Selector.from_label_selector(selector)
    return selector_from_set({ju.CONTROLLER_UID_LABEL: meta_of(job).uid or ""})


def _tracked(pod: V1Pod) -> bool:
    return ju.TRACKING_FINALIZER in (meta_of(pod).finalizers or ())


def _index_failures(pod: V1Pod) -> int:
    try:
        return int((meta_of(pod).annotations or {}).get(ju.INDEX_FAILURE_COUNT, "0"))
    except ValueError:
        return 0


def _deletion_order(pod: V1Pod) -> tuple[bool, bool, float]:
    """Unscheduled, then not ready, then newest first (as ``ActivePods`` sorts for deletion)."""
    created = meta_of(pod).creation_timestamp
    return (bool(pod.spec is not None and pod.spec.node_name), is_pod_ready(pod),
            -(created.timestamp() if created is not None else 0.0))


def _get(conditions: Sequence[dict[str, Any]], ctype: str) -> dict[str, Any] | None:
    return next((c for c in conditions if c.get("type") == ctype), None)


def _is_true(conditions: Sequence[dict[str, Any]], ctype: str) -> bool:
    condition = _get(conditions, ctype)
    return condition is not None and condition.get("status") == "True"


def _set(conditions: list[dict[str, Any]], ctype: str, status: str, reason: str, message: str,
         now: dt.datetime) -> None:
    """Set a condition; its transition time moves only when its status does (``updateConditionsIfNeeded``)."""
    current = _get(conditions, ctype)
    stamp = format_time(now)
    if current is not None:
        if current.get("status") != status:
            current["lastTransitionTime"] = stamp
        current.update(status=status, reason=reason, message=message, lastProbeTime=stamp)
        return
    conditions.append({"type": ctype, "status": status, "lastProbeTime": stamp, "lastTransitionTime": stamp,
                       "reason": reason, "message": message})


def _pod_key(pod: V1Pod) -> str:
    meta = meta_of(pod)
    return f"{meta.namespace}/{meta.name}"
