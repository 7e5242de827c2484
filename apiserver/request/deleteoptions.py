"""DeleteOptions, from a DELETE's body and query, checked as Go's decoder checks them.

A DELETE may carry a ``DeleteOptions`` body (kubectl sends one), an
Eviction carries one as ``deleteOptions``, and the same fields may come as
query parameters. kube-apiserver decodes the body into the typed struct, so a
field of the wrong JSON type is a 400 naming the field and its Go type
(``json: cannot unmarshal string into Go struct field
DeleteOptions.preconditions of type v1.Preconditions``), an integer outside
int64 is refused the same way, and unknown fields are ignored. Query
parameters go through :mod:`apiserver.request.params`.

Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from apiserver import errors
from apiserver.registry.store import DeleteOptions
from apiserver.request import params

#: Field name -> (the Go type named in errors, the JSON type it needs).
_FIELDS: Final[dict[str, tuple[str, str]]] = {
    "kind": ("string", "string"),
    "apiVersion": ("string", "string"),
    "gracePeriodSeconds": ("int64", "int64"),
    "preconditions": ("v1.Preconditions", "object"),
    "orphanDependents": ("bool", "bool"),
    "propagationPolicy": ("v1.DeletionPropagation", "string"),
    "dryRun": ("[]string", "array"),
    "ignoreStoreReadErrorWithClusterBreakingPotential": ("bool", "bool"),
}
_PRECONDITIONS: Final[dict[str, tuple[str, str]]] = {
    "uid": ("types.UID", "string"),
    "resourceVersion": ("string", "string"),
}
PROPAGATION_POLICIES: Final = ("Orphan", "Background", "Foreground")


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _unmarshal_error(value: Any, field: str, go_type: str) -> errors.APIError:
    got = _json_type(value)
    if got == "number":
        got = f"number {value}"
    return errors.bad_request(f"json: cannot unmarshal {got} into Go struct field {field} of type {go_type}")


def _check(doc: Mapping[str, Any], spec: Mapping[str, tuple[str, str]], struct: str) -> None:
    for name, (go_type, want) in spec.items():
        value = doc.get(name)
        if value is None:
            continue
        field = f"{struct}.{name}"
        if want == "int64":
            if isinstance(value, bool) or not isinstance(value, int) or not params.INT64_MIN <= value <= \
                    params.INT64_MAX:
                raise _unmarshal_error(value, field, go_type)
        elif want == "string":
            if not isinstance(value, str):
                raise _unmarshal_error(value, field, go_type)
        elif want == "bool":
            if not isinstance(value, bool):
                raise _unmarshal_error(value, field, go_type)
        elif want == "array":
            if not isinstance(value, list):
                raise _unmarshal_error(value, field, go_type)
            for item in value:
                if not isinstance(item, str):
                    raise _unmarshal_error(item, field, "string")
        elif not isinstance(value, dict):
            raise _unmarshal_error(value, field, go_type)


def from_document(doc: Any, *, struct: str = "DeleteOptions") -> DeleteOptions:
    """DeleteOptions from a decoded body (``struct`` names it in errors: ``Eviction.deleteOptions``)."""
    opts = DeleteOptions()
    if doc is None:
        return opts
    if not isinstance(doc, dict):
        raise errors.bad_request(f"json: cannot unmarshal {_json_type(doc)} into Go value of type v1.DeleteOptions")
    _check(doc, _FIELDS, struct)
    if doc.get("kind") not in (None, "", "DeleteOptions"):
        raise errors.bad_request(f"expected DeleteOptions, got {doc.get('kind')}")
    pre = doc.get("preconditions") or {}
    _check(pre, _PRECONDITIONS, f"{struct}.preconditions")
    opts.grace_period_seconds = doc.get("gracePeriodSeconds")
    opts.propagation_policy = doc.get("propagationPolicy")
    if doc.get("orphanDependents") is not None and opts.propagation_policy is None:
        opts.propagation_policy = "Orphan" if doc["orphanDependents"] else "Background"
    opts.precondition_uid = pre.get("uid")
    opts.precondition_rv = pre.get("resourceVersion")
    dry_run = doc.get("dryRun") or []
    _check_dry_run(dry_run)
    opts.dry_run = "All" in dry_run
    _check_policy(opts.propagation_policy)
    return opts


def _check_dry_run(values: list[str]) -> None:
    for value in values:
        if value != "All":
            raise errors.bad_request(f'Invalid dryRun value: "{value}". Valid values: ["All"]')


def _check_policy(policy: str | None) -> None:
    if policy not in (None, *PROPAGATION_POLICIES):
        raise errors.bad_request(f'Unsupported propagationPolicy "{policy}": supported values: '
                                 '"Orphan", "Background", "Foreground"')
