"""authentication.k8s.io/v1 TokenReviews: is this bearer token valid, and whose is it; never stored.

Answered by the APIServer's own token authenticators (``--token-auth-file``
and ServiceAccount JWTs), as kube-apiserver answers them: a valid token's
user (with ``system:authenticated``) and the audiences it was checked for
(``spec.audiences``, else the API audiences); an invalid one's
``authenticated`` is false and ``error`` says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from starlette.responses import Response

from apiserver.authentication import InvalidCredentials
from apiserver.endpoints.responses import json_response
from apiserver.registry.authorization.review import decode_review, invalid
from apiserver.registry.resource import Resource
from apiserver.validation.field import FieldError
from machinery.api import kinds

if TYPE_CHECKING:
    from apiserver.endpoints.request import Call


class TokenReviewREST:
    async def create(self, call: Call) -> Response:
        review = await decode_review(call)
        spec = review.get("spec") or {}
        token = spec.get("token")
        if not token:
            raise invalid(call, review, [FieldError.required("spec.token", "")])
        authenticator = call.server.authenticator
        audiences = [str(a) for a in spec.get("audiences") or ()] or list(authenticator.api_audiences)
        status: dict[str, Any]
        try:
            user = await authenticator.authenticate_token_fresh(str(token), audiences)
        except InvalidCredentials as err:
            status = {"user": {}, "error": str(err)}
        else:
            info: dict[str, Any] = {"username": user.name}
            if user.uid:
                info["uid"] = user.uid
            if user.groups:
                info["groups"] = list(user.groups)
            if user.extra:
                info["extra"] = {k: list(v) for k, v in user.extra}
            status = {"authenticated": True, "user": info, "audiences": audiences}
        review["status"] = status
        return json_response(review, 201)


RESOURCE: Final = Resource(info=kinds.builtin("authentication.k8s.io", "v1", "tokenreviews"),
                           rest=TokenReviewREST())
