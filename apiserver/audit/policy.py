"""Audit policy: Kubernetes' ``audit.k8s.io/v1`` Policy, and which level a request is logged at.

A Policy is an ordered list of rules; the first rule that matches a request
gives its level (``None``, ``Metadata``, ``Request``, ``RequestResponse``) and
the stages to leave out; a request no rule matches is not logged. A rule
matches when every condition it has holds:

- ``users``, ``userGroups``: the user is one of them / in one of them;
- ``verbs``: the request's verb is one of them;
- ``resources`` (``group``, ``resources``, ``resourceNames``) and
  ``namespaces``: a resource request of one of them (``pods/log``,
  ``*`` and ``*/status`` forms as Kubernetes reads them; namespace ``""``
  is a cluster-scoped resource);
- ``nonResourceURLs``: a non-resource request for one of those paths (a
  trailing ``*`` matches a prefix).

:func:`load_policy` reads a ``--audit-policy-file`` (YAML or JSON) and refuses
a malformed one with a message naming the field. Immutable once loaded.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from apiserver.admission import UserInfo
from apiserver.endpoints.requestinfo import RequestInfo

API_VERSIONS: Final = frozenset({"audit.k8s.io/v1", "audit.k8s.io/v1beta1", "audit.k8s.io/v1alpha1"})
STAGES: Final = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")


class Level(enum.IntEnum):
    NONE = 0
    METADATA = 1
    REQUEST = 2
    REQUEST_RESPONSE = 3

    @property
    def text(self) -> str:
        return {Level.NONE: "None", Level.METADATA: "Metadata", Level.REQUEST: "Request",
                Level.REQUEST_RESPONSE: "RequestResponse"}[self]


_LEVELS: Final = {level.text: level for level in Level}


class PolicyError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class GroupResources:
    group: str
    resources: tuple[str, ...]
    resource_names: tuple[str, ...]

    def matches(self, group: str, resource: str, subresource: str, name: str) -> bool:
        if self.group != group:
            return False
        if not self.resources:
            return True
        if self.resource_names and name not in self.resource_names:
            return False
        combined = f"{resource}/{subresource}" if subresource else resource
        for r in self.resources:
            if r in (combined, "*") or (subresource and r == f"*/{subresource}") or r == f"{resource}/*":
                return True
        return False


@dataclass(frozen=True, slots=True)
class PolicyRule:
    level: Level
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] | None = None
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: tuple[str, ...] = ()
    omit_managed_fields: bool | None = None

    def matches(self, user: UserInfo | None, info: RequestInfo) -> bool:
        if self.users and (user is None or user.name not in self.users):
            return False
        if self.user_groups and (user is None or not set(self.user_groups) & set(user.groups)):
            return False
        if self.verbs and info.verb not in self.verbs:
            return False
        if self.resources or self.namespaces is not None:
            if not info.is_resource_request:
                return False
            if self.namespaces is not None and info.namespace not in self.namespaces:
                return False
            if not self.resources:
                return True
            return any(gr.matches(info.api_group, info.resource, info.subresource, info.name)
                       for gr in self.resources)
        if self.non_resource_urls:
            if info.is_resource_request:
                return False
            return any(url == info.path or (url.endswith("*") and info.path.startswith(url[:-1]))
                       for url in self.non_resource_urls)
        return True


@dataclass(frozen=True, slots=True)
class Decision:
    level: Level
    omit_stages: frozenset[str]
    omit_managed_fields: bool


NOT_LOGGED: Final = Decision(Level.NONE, frozenset(), False)


@dataclass(frozen=True, slots=True)
class Policy:
    rules: tuple[PolicyRule, ...]
    omit_stages: tuple[str, ...] = ()
    omit_managed_fields: bool = False

    def evaluate(self, user: UserInfo | None, info: RequestInfo) -> Decision:
        for rule in self.rules:
            if rule.matches(user, info):
                if rule.level is Level.NONE:
                    return NOT_LOGGED
                omit = rule.omit_managed_fields if rule.omit_managed_fields is not None else self.omit_managed_fields
                return Decision(rule.level, frozenset((*self.omit_stages, *rule.omit_stages)), omit)
        return NOT_LOGGED


def _strings(doc: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = doc.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PolicyError(f"{where}.{key}: must be a list of strings")
    return tuple(value)


def _stages(doc: dict[str, Any], where: str) -> tuple[str, ...]:
    stages = _strings(doc, "omitStages", where)
    for stage in stages:
        if stage not in STAGES:
            raise PolicyError(f'{where}.omitStages: Invalid value: "{stage}": allowed stages are '
                              f"{', '.join(STAGES)}")
    return stages


def parse_policy(doc: Any) -> Policy:
    if not isinstance(doc, dict):
        raise PolicyError("the audit policy must be a mapping")
    if doc.get("kind") != "Policy":
        raise PolicyError(f'kind: must be "Policy", not {doc.get("kind")!r}')
    if doc.get("apiVersion") not in API_VERSIONS:
        raise PolicyError(f"apiVersion: must be audit.k8s.io/v1, not {doc.get('apiVersion')!r}")
    raw_rules = doc.get("rules") or []
    if not isinstance(raw_rules, list):
        raise PolicyError("rules: must be a list")
    rules = []
    for i, raw in enumerate(raw_rules):
        where = f"rules[{i}]"
        if not isinstance(raw, dict):
            raise PolicyError(f"{where}: must be a mapping")
        level = _LEVELS.get(raw.get("level"))  # type: ignore[arg-type]
        if level is None:
            raise PolicyError(f'{where}.level: Unsupported value: "{raw.get("level")}": supported values: '
                              '"None", "Metadata", "Request", "RequestResponse"')
        resources = []
        for j, gr in enumerate(raw.get("resources") or []):
            if not isinstance(gr, dict):
                raise PolicyError(f"{where}.resources[{j}]: must be a mapping")
            resources.append(GroupResources(str(gr.get("group") or ""), _strings(gr, "resources", where),
                                            _strings(gr, "resourceNames", where)))
        urls = _strings(raw, "nonResourceURLs", where)
        if urls and (resources or raw.get("namespaces") is not None):
            raise PolicyError(f"{where}: rules cannot apply to both regular and non-resource URLs")
        namespaces = _strings(raw, "namespaces", where) if raw.get("namespaces") is not None else None
        rules.append(PolicyRule(level, _strings(raw, "users", where), _strings(raw, "userGroups", where),
                                _strings(raw, "verbs", where), tuple(resources), namespaces or None, urls,
                                _stages(raw, where), raw.get("omitManagedFields")))
    return Policy(tuple(rules), _stages(doc, "policy"), bool(doc.get("omitManagedFields")))


def load_policy(path: str | Path) -> Policy:
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except OSError as err:
        raise PolicyError(f"cannot read audit policy {path}: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise PolicyError(f"audit policy {path} is not valid YAML: {err}") from None
    try:
        return parse_policy(doc)
    except PolicyError as err:
        raise PolicyError(f"audit policy {path}: {err}") from None


def metadata_policy(omit_stages: Sequence[str] = ("RequestReceived",)) -> dict[str, Any]:
    """The policy ``kubesim up`` writes: every request at Metadata, without the RequestReceived stage."""
    return {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": list(omit_stages),
            "rules": [{"level": "Metadata"}]}
