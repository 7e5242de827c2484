"""Defaulting and validation of API objects, with Kubernetes' rules and Kubernetes' messages.

The APIServer calls, for every create and update, the kind's defaulting
and then its ``validate_*`` function (through the kind's strategy), and answers a non-empty
list of :class:`FieldError` with a ``422 Invalid`` Status built from
:func:`invalid_message` and :meth:`FieldError.cause`.

Everything here is a pure function over wire-form dicts: safe from any task.
"""

from __future__ import annotations

from apiserver.validation.coordination import validate_lease, validate_lease_update
from apiserver.validation.core import (
    validate_event,
    validate_event_update,
    validate_namespace,
    validate_namespace_finalize_update,
    validate_namespace_status_update,
    validate_namespace_update,
    validate_node,
    validate_node_status_update,
    validate_node_update,
    validate_replication_controller,
    validate_replication_controller_status_update,
    validate_replication_controller_update,
)
from apiserver.validation.defaults import (
    default_namespace,
    default_node,
    default_pod,
    default_replication_controller,
    prepare_namespace_create,
)
from apiserver.validation.field import ErrorType, FieldError, Path, invalid_message
from apiserver.validation.meta import validate_object_meta, validate_object_meta_update
from apiserver.validation.pod import (
    validate_binding,
    validate_pod,
    validate_pod_ephemeral_containers_update,
    validate_pod_spec,
    validate_pod_status_update,
    validate_pod_template_spec,
    validate_pod_update,
)

__all__ = [
    "ErrorType",
    "FieldError",
    "Path",
    "default_namespace",
    "default_node",
    "default_pod",
    "default_replication_controller",
    "invalid_message",
    "prepare_namespace_create",
    "validate_binding",
    "validate_event",
    "validate_event_update",
    "validate_lease",
    "validate_lease_update",
    "validate_namespace",
    "validate_namespace_finalize_update",
    "validate_namespace_status_update",
    "validate_namespace_update",
    "validate_node",
    "validate_node_status_update",
    "validate_node_update",
    "validate_object_meta",
    "validate_object_meta_update",
    "validate_pod",
    "validate_pod_ephemeral_containers_update",
    "validate_pod_spec",
    "validate_pod_status_update",
    "validate_pod_template_spec",
    "validate_pod_update",
    "validate_replication_controller",
    "validate_replication_controller_status_update",
    "validate_replication_controller_update",
]
