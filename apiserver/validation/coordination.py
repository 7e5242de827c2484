"""Validation of ``coordination.k8s.io/v1`` Leases, the objects leader election and node heartbeats write.

Follows ``pkg/apis/coordination/validation`` of Kubernetes 1.32: the
generic ObjectMeta rules (without the core group's finalizer rule) and a
few bounds on the spec. Kubernetes puts no limit on ``holderIdentity``, so
neither does kubesim.

Pure functions over plain dicts; no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import (
    IS_NEGATIVE,
    validate_object_meta,
    validate_object_meta_update,
    validate_qualified_name,
)

_SPEC: Final = Path("spec")
#: The strategies Kubernetes defines itself; any other must be a qualified name (``example.com/mine``).
_LEASE_STRATEGIES: Final = ("OldestEmulationVersion",)


def validate_lease(lease: Mapping[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(lease.get("metadata"), namespaced=True)
    return errs + _validate_lease_spec(lease.get("spec") or {})


def validate_lease_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    return errs + _validate_lease_spec(new.get("spec") or {})


def _validate_lease_spec(spec: Mapping[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and duration <= 0:
        errs.append(FieldError.invalid(_SPEC.child("leaseDurationSeconds"), duration,
                                       "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if transitions is not None and transitions < 0:
        errs.append(FieldError.invalid(_SPEC.child("leaseTransitions"), transitions, IS_NEGATIVE))
    strategy = spec.get("strategy")
    if strategy is not None:
        # Kubernetes nests the field name twice in this path.
        strategy_path = _SPEC.child("strategy", "strategy")
        if "/" not in strategy:
            if strategy not in _LEASE_STRATEGIES:
                errs.append(FieldError.not_supported(strategy_path, strategy, _LEASE_STRATEGIES))
        else:
            errs += validate_qualified_name(strategy, strategy_path)
    if spec.get("preferredHolder") and not strategy:
        errs.append(FieldError.forbidden(_SPEC.child("preferredHolder"),
                                         "may only be specified if `strategy` is defined"))
    return errs
