"""The authorizer interface: attributes in, a decision and a reason out; and the authorizers that compose.

As in kube-apiserver (``k8s.io/apiserver/pkg/authorization/authorizer``):

- :class:`Attributes` are what a request asks (user, verb, API group,
  resource, subresource, namespace, name; or a non-resource path);
- an :class:`Authorizer` answers :data:`ALLOW`, :data:`DENY` or
  :data:`NO_OPINION`, with a reason; a :class:`Union` asks each in turn and
  the first that does not abstain decides (``--authorization-mode=Node,RBAC``);
- :class:`PrivilegedGroups` answers ALLOW for ``system:masters`` before any
  mode is asked, as kube-apiserver puts it first;
- a :class:`RuleResolver` lists what a user may do in a namespace
  (SelfSubjectRulesReview, escalation checks).

Authorizers read only in-memory state (the watch caches): ``authorize`` is
synchronous, so that a request costs no extra awaits.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

from apiserver.admission import UserInfo
from apiserver.authorization.rules import ALL, Rule
from apiserver.endpoints.requestinfo import RequestInfo

SYSTEM_MASTERS: Final = "system:masters"


class Decision(enum.Enum):
    DENY = "deny"
    ALLOW = "allow"
    NO_OPINION = "no-opinion"


ALLOW: Final = Decision.ALLOW
DENY: Final = Decision.DENY
NO_OPINION: Final = Decision.NO_OPINION


@dataclass(frozen=True, slots=True)
class Attributes:
    """``authorizer.AttributesRecord``."""

    user: UserInfo
    verb: str
    resource_request: bool = True
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""

    @classmethod
    def of(cls, info: RequestInfo, user: UserInfo) -> Attributes:
        if info.is_resource_request:
            return cls(user, info.verb, True, info.namespace, info.api_group, info.api_version, info.resource,
                       info.subresource, info.name, info.path)
        return cls(user, info.verb, False, path=info.path)


class Authorizer(Protocol):
    def authorize(self, attrs: Attributes) -> tuple[Decision, str]: ...


@dataclass(slots=True)
class Rules:
    """What a user may do in a namespace (``RulesFor``): rules, whether the list is incomplete, and why."""

    resource: list[Rule] = field(default_factory=list)
    non_resource: list[Rule] = field(default_factory=list)
    incomplete: bool = False
    errors: list[str] = field(default_factory=list)

    def extend(self, other: Rules) -> None:
        self.resource += other.resource
        self.non_resource += other.non_resource
        self.incomplete = self.incomplete or other.incomplete
        self.errors += other.errors


class RuleResolver(Protocol):
    def rules_for(self, user: UserInfo, namespace: str) -> Rules: ...


class AlwaysAllow:
    """``--authorization-mode=AlwaysAllow``."""

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        return ALLOW, ""

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return Rules([Rule((ALL,), (ALL,), (ALL,))], [Rule((ALL,), non_resource_urls=(ALL,))])


class AlwaysDeny:
    """``--authorization-mode=AlwaysDeny``."""

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        return NO_OPINION, "Everything is forbidden."

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return Rules(incomplete=False)


class PrivilegedGroups:
    """Members of ``system:masters`` may do anything, whatever RBAC holds (kube-apiserver's first authorizer)."""

    def __init__(self, groups: Sequence[str] = (SYSTEM_MASTERS,)) -> None:
        self.groups = frozenset(groups)

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        if not self.groups.isdisjoint(attrs.user.groups):
            return ALLOW, ""
        return NO_OPINION, ""

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        if not self.groups.isdisjoint(user.groups):
            return AlwaysAllow().rules_for(user, namespace)
        return Rules()


class Union:
    """Authorizers asked in order; the first ALLOW or DENY decides, reasons of abstentions are joined."""

    def __init__(self, authorizers: Sequence[Authorizer]) -> None:
        self.authorizers = tuple(authorizers)

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        reasons: list[str] = []
        for authorizer in self.authorizers:
            decision, reason = authorizer.authorize(attrs)
            if decision is not NO_OPINION:
                return decision, reason
            if reason:
                reasons.append(reason)
        return NO_OPINION, "\n".join(reasons)

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        out = Rules()
        for authorizer in self.authorizers:
            resolver = getattr(authorizer, "rules_for", None)
            if resolver is not None:
                out.extend(resolver(user, namespace))
        return out
