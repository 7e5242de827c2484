"""admissionregistration.k8s.io: webhook configurations and validating admission policies (stored; not called)."""

from __future__ import annotations

from apiserver.registry.admissionregistration import (
    mutatingwebhookconfigurations,
    validatingadmissionpolicies,
    validatingadmissionpolicybindings,
    validatingwebhookconfigurations,
)

RESOURCES = [
    mutatingwebhookconfigurations.RESOURCE,
    validatingadmissionpolicies.RESOURCE,
    validatingadmissionpolicybindings.RESOURCE,
    validatingwebhookconfigurations.RESOURCE,
]
