"""authorization.k8s.io/v1 subjectaccessreviews: answered by the authorizer, never stored (see ``review.py``)."""

from __future__ import annotations

from typing import Final

from apiserver.registry.authorization.review import AccessReviewREST
from apiserver.registry.resource import Resource
from machinery.api import kinds

RESOURCE: Final = Resource(info=kinds.builtin("authorization.k8s.io", "v1", "subjectaccessreviews"),
                           rest=AccessReviewREST(subject=True))
