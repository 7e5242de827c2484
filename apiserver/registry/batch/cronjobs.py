"""batch/v1 CronJobs: defaults, schedule and time zone validation, and the printer.

As ``pkg/registry/batch/cronjob/strategy.go``: a spec change bumps the
generation, ``/status`` writes only the status, and a CronJob's name may be at
most 52 characters on create (its Jobs append 11).
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
from machinery.api import kinds


class CronJobStrategy(Strategy):
    has_generation = True
    status_zeros: ClassVar[Mapping[str, object]] = {}

    def default(self, obj: Obj) -> None:
        validation.default_cron_job(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_cron_job(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_cron_job_update(new, old)


class CronJobStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_cron_job_status_update(new, old)


_STRATEGY: Final = CronJobStrategy()
_BATCH = "io.k8s.api.batch.v1."

COLUMNS: Final = (
    printers.NAME,
    Column("Schedule", "string", (_BATCH + "CronJobSpec", "schedule")),
    Column("Timezone", "string", (_BATCH + "CronJobSpec", "timeZone")),
    Column("Suspend", "boolean", (_BATCH + "CronJobSpec", "suspend")),
    Column("Active", "integer", (_BATCH + "CronJobStatus", "active")),
    Column("Last Schedule", "string", (_BATCH + "CronJobStatus", "lastScheduleTime")),
    printers.AGE,
    printers.CONTAINERS,
    printers.IMAGES,
    Column("Selector", "string", (_BATCH + "JobSpec", "selector"), 1),
)


def _bool_pointer(value: object) -> str:
    """``printBoolPtr``."""
    if value is None:
        return "<unset>"
    return "True" if value else "False"


def _row(cron_job: Obj, now: datetime) -> Row:
    metadata: Obj = cron_job.get("metadata") or {}
    spec: Obj = cron_job.get("spec") or {}
    status: Obj = cron_job.get("status") or {}
    job_spec: Obj = (spec.get("jobTemplate") or {}).get("spec") or {}
    containers = list(((job_spec.get("template") or {}).get("spec") or {}).get("containers") or [])
    last = status.get("lastScheduleTime")
    return Row([
        metadata.get("name", ""), spec.get("schedule", ""), spec.get("timeZone") or "<none>",
        _bool_pointer(spec.get("suspend")), len(status.get("active") or []),
        since(last, now) if last else "<none>", since(metadata.get("creationTimestamp"), now),
        printers.container_names(containers), printers.container_images(containers),
        printers.format_label_selector(job_spec.get("selector")),
    ])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.CRON_JOBS,
    strategy=_STRATEGY,
    subresources={"status": StatusREST(CronJobStatusStrategy(_STRATEGY))},
    printer=PRINTER,
)
