"""flowcontrol.apiserver.k8s.io: FlowSchemas and PriorityLevelConfigurations (stored; not enforced)."""

from __future__ import annotations

from apiserver.registry.flowcontrol import flowschemas, prioritylevelconfigurations

RESOURCES = [flowschemas.RESOURCE, prioritylevelconfigurations.RESOURCE]
