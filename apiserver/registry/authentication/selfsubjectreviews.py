"""authentication.k8s.io/v1 SelfSubjectReviews: who the requester is (``kubectl auth whoami``), never stored."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from starlette.responses import Response

from apiserver.endpoints.responses import json_response
from apiserver.registry.authorization.review import decode_review
from apiserver.registry.resource import Resource
from machinery.api import kinds

if TYPE_CHECKING:
    from apiserver.endpoints.request import Call


class SelfSubjectReviewREST:
    async def create(self, call: Call) -> Response:
        review = await decode_review(call)
        user = call.user
        info: dict[str, object] = {"username": user.name}
        if user.uid:
            info["uid"] = user.uid
        if user.groups:
            info["groups"] = list(user.groups)
        if user.extra:
            info["extra"] = {k: list(v) for k, v in user.extra}
        review["status"] = {"userInfo": info}
        return json_response(review, 201)


RESOURCE: Final = Resource(info=kinds.builtin("authentication.k8s.io", "v1", "selfsubjectreviews"),
                           rest=SelfSubjectReviewREST())
