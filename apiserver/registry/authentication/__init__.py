"""authentication.k8s.io: SelfSubjectReviews and TokenReviews."""

from __future__ import annotations

from apiserver.registry.authentication import selfsubjectreviews, tokenreviews

RESOURCES = [selfsubjectreviews.RESOURCE, tokenreviews.RESOURCE]
