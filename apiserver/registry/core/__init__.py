"""core/v1 (the legacy group): Pods, Nodes, Namespaces, Services, ConfigMaps and the rest."""

from __future__ import annotations

from apiserver.registry.core import (
    bindings,
    componentstatuses,
    configmaps,
    endpoints,
    events,
    limitranges,
    namespaces,
    nodes,
    persistentvolumeclaims,
    persistentvolumes,
    pods,
    podtemplates,
    replicationcontrollers,
    resourcequotas,
    secrets,
    serviceaccounts,
    services,
)

RESOURCES = [
    bindings.RESOURCE,
    componentstatuses.RESOURCE,
    configmaps.RESOURCE,
    endpoints.RESOURCE,
    events.RESOURCE,
    limitranges.RESOURCE,
    namespaces.RESOURCE,
    nodes.RESOURCE,
    persistentvolumeclaims.RESOURCE,
    persistentvolumes.RESOURCE,
    pods.RESOURCE,
    podtemplates.RESOURCE,
    replicationcontrollers.RESOURCE,
    resourcequotas.RESOURCE,
    secrets.RESOURCE,
    serviceaccounts.RESOURCE,
    services.RESOURCE,
]
