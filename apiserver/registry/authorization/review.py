"""What the access and rules reviews share: decode the review, answer it with the authorizer's decision.

kube-apiserver answers a SubjectAccessReview (and the self and local forms)
by asking its authorizer about the attributes in the spec, and a
SelfSubjectRulesReview by asking the authorizer's rule resolver; so does
kubesim, with the same authorizer that guards every request
(``system:masters``, then ``--authorization-mode``): ``kubectl auth can-i``
answers what the request would get. A SubjectAccessReview names its user
(``spec.user``, ``groups``, ``uid``, ``extra``, taken as given); the self forms
are about the requester (after impersonation, so ``--as`` works).
Reviews are never stored: the answer is the posted object with its status, 201.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from apiserver import errors
from apiserver.admission import UserInfo
from apiserver.authorization.authorizer import ALLOW, DENY, Attributes
from apiserver.endpoints import body
from apiserver.endpoints.responses import json_response
from apiserver.validation.field import FieldError, invalid_message

if TYPE_CHECKING:
    from apiserver.endpoints.request import Call

Obj = dict[str, Any]


async def decode_review(call: Call) -> Obj:
    opts = body.write_options(call)
    review = await body.decode_object(call, opts)
    review["metadata"] = {**(review.get("metadata") or {}), "creationTimestamp": None}
    return review


def invalid(call: Call, review: Obj, errs: list[FieldError]) -> errors.APIError:
    name = (review.get("metadata") or {}).get("name") or ""
    return errors.invalid(call.info, name, invalid_message(call.info.group_kind, name, errs),
                          [e.cause() for e in errs])


def validate_access_spec(spec: Obj, *, subject: bool) -> list[FieldError]:
    """``ValidateSubjectAccessReviewSpec``: exactly one kind of attributes, and a subject when required."""
    errs = []
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if (resource is None) == (non_resource is None):
        errs.append(FieldError.invalid("spec.resourceAttributes", resource if resource is not None else "null",
                                       "exactly one of nonResourceAttributes or resourceAttributes must be "
                                       "specified"))
    if subject and not spec.get("user") and not spec.get("groups"):
        errs.append(FieldError.invalid("spec.user", spec.get("user") or "",
                                       "at least one of user or group must be specified"))
    return errs


def review_user(spec: Obj) -> UserInfo:
    """The user a SubjectAccessReview asks about, as given (no group is added)."""
    extra = spec.get("extra") or {}
    return UserInfo(str(spec.get("user") or ""), tuple(str(g) for g in spec.get("groups") or ()),
                    str(spec.get("uid") or ""),
                    tuple(sorted((str(k), tuple(str(v) for v in vs or ())) for k, vs in extra.items())))


def review_attributes(user: UserInfo, spec: Obj) -> Attributes:
    resource = spec.get("resourceAttributes")
    if resource is not None:
        return Attributes(user, str(resource.get("verb") or ""), True, str(resource.get("namespace") or ""),
                          str(resource.get("group") or ""), str(resource.get("version") or ""),
                          str(resource.get("resource") or ""), str(resource.get("subresource") or ""),
                          str(resource.get("name") or ""))
    other = spec.get("nonResourceAttributes") or {}
    return Attributes(user, str(other.get("verb") or ""), False, path=str(other.get("path") or ""))


def decide(call: Call, user: UserInfo, spec: Obj) -> Obj:
    """The authorizer's answer about ``spec``'s attributes for ``user``, as a review status."""
    decision, reason = call.server.authorizer.authorize(review_attributes(user, spec))
    status: Obj = {"allowed": decision is ALLOW}
    if decision is DENY:
        status["denied"] = True
    if reason:
        status["reason"] = reason
    return status


class AccessReviewREST:
    """SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview: create only."""

    def __init__(self, *, subject: bool, local: bool = False) -> None:
        self.subject = subject
        self.local = local

    async def create(self, call: Call) -> Response:
        review = await decode_review(call)
        spec = review.get("spec") or {}
        errs = validate_access_spec(spec, subject=self.subject)
        if self.local:
            ns = (spec.get("resourceAttributes") or {}).get("namespace")
            if ns != call.namespace:
                errs.append(FieldError.invalid("spec.resourceAttributes.namespace", ns or "",
                                               "must match metadata.namespace"))
        if errs:
            raise invalid(call, review, errs)
        review["status"] = decide(call, review_user(spec) if self.subject else call.user, spec)
        return json_response(review, 201)


class RulesReviewREST:
    """SelfSubjectRulesReview: the rules the requester has in a namespace."""

    async def create(self, call: Call) -> Response:
        review = await decode_review(call)
        namespace = (review.get("spec") or {}).get("namespace")
        if not namespace:
            raise invalid(call, review, [FieldError.required("spec.namespace", "")])
        rules = call.server.authorizer.rules_for(call.user, str(namespace))
        status: Obj = {
            "resourceRules": [{k: v for k, v in {"verbs": list(r.verbs), "apiGroups": list(r.api_groups),
                                                 "resources": list(r.resources),
                                                 "resourceNames": list(r.resource_names)}.items()
                               if v or k == "verbs"} for r in rules.resource],
            "nonResourceRules": [{"verbs": list(r.verbs), "nonResourceURLs": list(r.non_resource_urls)}
                                 for r in rules.non_resource],
            "incomplete": rules.incomplete,
        }
        if rules.errors:
            status["evaluationError"] = rules.errors[0] if len(rules.errors) == 1 else \
                "[" + ", ".join(rules.errors) + "]"
        review["status"] = status
        return json_response(review, 201)
