"""ReplicationControllers: generation bumps on spec changes; ``/scale`` reads and writes spec.replicas."""

from __future__ import annotations

from typing import Any, ClassVar

from apiserver import errors
from apiserver.registry.store import Store, WriteOptions
from apiserver.registry.strategy import Obj, Strategy
from apiserver.storage.objects import Entry
from apiserver.validation import core as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds
from machinery.api.labels import format_selector


class ReplicationControllerStrategy(Strategy):
    ri = kinds.REPLICATION_CONTROLLERS
    has_generation = True
    selectable_fields: ClassVar[tuple[str, ...]] = ("status.replicas",)

    def prepare_for_create(self, obj: Obj) -> None:
        # The official clients require status.replicas, which Go always serializes.
        obj["status"] = {"replicas": 0}

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_status_update(new, old)
        new.setdefault("status", {}).setdefault("replicas", 0)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_replication_controller(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_replication_controller_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_replication_controller_status_update(new, old)


def scale_of(entry: Entry) -> dict[str, Any]:
    """The ``autoscaling/v1`` Scale view of an RC."""
    rc = entry.obj
    meta = rc.get("metadata") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if k in meta},
        "spec": {"replicas": (rc.get("spec") or {}).get("replicas", 0)},
        "status": {"replicas": (rc.get("status") or {}).get("replicas", 0),
                   "selector": format_selector((rc.get("spec") or {}).get("selector") or {})},
    }


async def update_scale(store: Store, namespace: str, name: str, scale: Obj, opts: WriteOptions) -> Entry:
    spec = scale.get("spec") or {}
    replicas = spec.get("replicas", 0)
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.invalid(kinds.REPLICATION_CONTROLLERS, name,
                             f'Scale.autoscaling "{name}" is invalid: spec.replicas: Invalid value: {replicas}: '
                             "must be greater than or equal to 0",
                             [FieldError.invalid("spec.replicas", replicas,
                                                 "must be greater than or equal to 0").cause()])
    want_rv = (scale.get("metadata") or {}).get("resourceVersion") or None

    def apply(rc: Obj, current: Entry) -> Obj:
        rc.setdefault("spec", {})["replicas"] = replicas
        return rc

    entry, _ = await store.update_with(
        namespace, name, apply, WriteOptions(dry_run=opts.dry_run, field_manager=opts.field_manager,
                                             subresource="scale"),
        expect_rv=lambda _new: want_rv)
    return entry
