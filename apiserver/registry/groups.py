"""The built-in API groups: the one list that says what kube-apiserver 1.32 serves by default.

Each group package lists its resources' registrations in ``RESOURCES``; this
module lists the groups (kube-apiserver's RESTStorageProviders). Adding a
built-in kind is one module in its group plus one entry in that group's list.
"""

from __future__ import annotations

from typing import Final

from apiserver.registry import (
    admissionregistration,
    apiextensions,
    apiregistration,
    apps,
    authentication,
    authorization,
    autoscaling,
    batch,
    certificates,
    coordination,
    core,
    discovery,
    events,
    flowcontrol,
    networking,
    node,
    policy,
    rbac,
    scheduling,
    storage,
)
from apiserver.registry.resource import Resource

GROUPS: Final = (
    core, admissionregistration, apiextensions, apiregistration, apps, authentication, authorization,
    autoscaling, batch, certificates, coordination, discovery, events, flowcontrol, networking, node, policy,
    rbac, scheduling, storage,
)


def builtin_resources() -> list[Resource]:
    return [resource for group in GROUPS for resource in group.RESOURCES]
