"""batch/v1 Jobs: defaults, a selector generated from the Job's uid, immutable template, the printer.

As ``pkg/registry/batch/job/strategy.go``: on create, unless
``spec.manualSelector``, the Pod template gets the ``batch.kubernetes.io/job-name``
and ``batch.kubernetes.io/controller-uid`` labels (and their legacy spellings)
and the selector selects the uid; the selector, completions (except for
Indexed Jobs scaled in tandem) and template never change, except that a
suspended Job that never started may change its scheduling directives.
``status.successful`` can be selected; ``/status`` writes only the status.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import ClassVar, Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import batch as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds, meta

#: kube-apiserver's warning when a Job is deleted with batch/v1's default, which orphans its Pods.
ORPHAN_WARNING: Final = ("child pods are preserved by default when jobs are deleted; set propagationPolicy=Background "
                         "to remove them or set propagationPolicy=Orphan to suppress this warning")


class JobStrategy(Strategy):
    has_generation = True
    selectable_fields: ClassVar[tuple[str, ...]] = ("status.successful",)
    # batch/v1 keeps the default it had before the garbage collector: a Job's Pods outlive it.
    default_propagation_policy = "Orphan"
    status_zeros: ClassVar[Mapping[str, object]] = {}

    def warnings_on_delete(self, propagation_policy: str | None) -> list[str]:
        return [ORPHAN_WARNING] if propagation_policy is None else []

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        # Defaulting comes first in Kubernetes (it happens while decoding): manualSelector is known here.
        self.default(obj)
        validation.generate_selector(obj)

    def default(self, obj: Obj) -> None:
        validation.default_job(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_job(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_job_update(new, old)

    def fields(self, obj: Obj) -> dict[str, str]:
        out = super().fields(obj)
        out["status.successful"] = str((obj.get("status") or {}).get("succeeded") or 0)
        return out


class JobStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_job_status_update(new, old)


_STRATEGY: Final = JobStrategy()
_BATCH = "io.k8s.api.batch.v1."

COLUMNS: Final = (
    printers.NAME,
    Column("Status", "string", "Status of the job."),
    Column("Completions", "string", (_BATCH + "JobStatus", "succeeded")),
    Column("Duration", "string", "Time required to complete the job."),
    printers.AGE,
    printers.CONTAINERS,
    printers.IMAGES,
    Column("Selector", "string", (_BATCH + "JobSpec", "selector"), 1),
)


def job_status(job: Obj) -> str:
    """The Status column: the first true condition of Kubernetes' list, else Running."""
    conditions = (job.get("status") or {}).get("conditions") or []
    for ctype, shown in (("Complete", "Complete"), ("Failed", "Failed")):
        if printers.condition_true(conditions, ctype):
            return shown
    if (job.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    for ctype in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if printers.condition_true(conditions, ctype):
            return ctype
    return "Running"


def completions(job: Obj) -> str:
    spec: Obj = job.get("spec") or {}
    succeeded = (job.get("status") or {}).get("succeeded") or 0
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    parallelism = spec.get("parallelism") or 0
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def duration(job: Obj, now: datetime) -> str:
    status: Obj = job.get("status") or {}
    start = meta.parse_time(status.get("startTime"))
    if start is None:
        return ""
    end = meta.parse_time(status.get("completionTime")) or now
    return printers.human_duration(end - start)


def _row(job: Obj, now: datetime) -> Row:
    metadata: Obj = job.get("metadata") or {}
    spec: Obj = job.get("spec") or {}
    containers = printers.template_containers(job)
    return Row([
        metadata.get("name", ""), job_status(job), completions(job), duration(job, now),
        since(metadata.get("creationTimestamp"), now), printers.container_names(containers),
        printers.container_images(containers), printers.format_label_selector(spec.get("selector")),
    ])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.JOBS,
    strategy=_STRATEGY,
    subresources={"status": StatusREST(JobStatusStrategy(_STRATEGY))},
    printer=PRINTER,
)
