"""authorization.k8s.io: the access and rules reviews."""

from __future__ import annotations

from apiserver.registry.authorization import (
    localsubjectaccessreviews,
    selfsubjectaccessreviews,
    selfsubjectrulesreviews,
    subjectaccessreviews,
)

RESOURCES = [localsubjectaccessreviews.RESOURCE, selfsubjectaccessreviews.RESOURCE,
             selfsubjectrulesreviews.RESOURCE, subjectaccessreviews.RESOURCE]
