"""RBAC PolicyRules: whether one allows a request, whether a set of them covers another.

kube-apiserver's ``rbac/v1`` evaluation helpers and the escalation check's
``Covers``, with the same rules:

- a verb, API group or resource ``*`` matches anything; ``pods/*`` is not
  special, but ``*/scale`` matches the ``scale`` subresource of any resource;
- ``resourceNames`` restrict a rule to those names (so a rule with names never
  allows ``list``, ``watch`` without a ``metadata.name`` selector, or ``create``);
- a non-resource URL matches exactly, or as a prefix when it ends in ``*``;
- a set of rules *covers* another when every single permission the other grants
  (one verb on one resource of one group, one name) is granted by one rule of
  the set. The permissions it does not cover are printed as Kubernetes prints
  them in the ``attempting to grant RBAC permissions not currently held`` error.

:class:`Rule` is a PolicyRule compiled once (frozensets) when the RBAC
authorizer reads a role; everything here is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ALL = "*"


@dataclass(frozen=True, slots=True)
class Rule:
    """A PolicyRule, its lists kept in order (for printing) and as sets (for matching)."""

    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, rule: Mapping[str, Any]) -> Rule:
        def strings(key: str) -> tuple[str, ...]:
            value = rule.get(key) or ()
            return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()
        return cls(strings("verbs"), strings("apiGroups"), strings("resources"), strings("resourceNames"),
                   strings("nonResourceURLs"))

    def to_dict(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {"verbs": list(self.verbs)}
        if self.api_groups or self.resources:
            out["apiGroups"] = list(self.api_groups)
            out["resources"] = list(self.resources)
        if self.resource_names:
            out["resourceNames"] = list(self.resource_names)
        if self.non_resource_urls:
            out["nonResourceURLs"] = list(self.non_resource_urls)
        return out

    # --- matching a request (rbac.RuleAllows) --------------------------------------------------

    def allows_resource(self, verb: str, group: str, resource: str, subresource: str, name: str) -> bool:
        verbs = self.verbs
        if verb not in verbs and ALL not in verbs:
            return False
        groups = self.api_groups
        if group not in groups and ALL not in groups:
            return False
        if not _resource_matches(self.resources, resource, subresource):
            return False
        return not self.resource_names or name in self.resource_names

    def allows_path(self, verb: str, path: str) -> bool:
        if verb not in self.verbs and ALL not in self.verbs:
            return False
        return any(url_matches(url, path) for url in self.non_resource_urls)

    # --- printing ------------------------------------------------------------------------------

    def compact(self) -> str:
        """``PolicyRule.CompactString``: ``{APIGroups:[""], Resources:["pods"], Verbs:["get"]}``."""
        parts = []
        for label, values in (("APIGroups", self.api_groups), ("Resources", self.resources),
                              ("ResourceNames", self.resource_names),
                              ("NonResourceURLs", self.non_resource_urls), ("Verbs", self.verbs)):
            if values:
                parts.append(f"{label}:[{' '.join(_go_quote(v) for v in values)}]")
        return "{" + ", ".join(parts) + "}"


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _resource_matches(rule_resources: tuple[str, ...], resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for candidate in rule_resources:
        if candidate == ALL or candidate == combined:
            return True
        # "*/subresource" matches that subresource of any resource.
        if subresource and candidate == "*/" + subresource:
            return True
    return False


def url_matches(rule_url: str, path: str) -> bool:
    if rule_url == ALL or rule_url == path:
        return True
    return rule_url.endswith("*") and path.startswith(rule_url.rstrip("*"))


def allows_resource(rules: Iterable[Rule], verb: str, group: str, resource: str, subresource: str,
                    name: str) -> Rule | None:
    """The first rule that allows the request, if any."""
    for rule in rules:
        if rule.allows_resource(verb, group, resource, subresource, name):
            return rule
    return None


def allows_path(rules: Iterable[Rule], verb: str, path: str) -> Rule | None:
    for rule in rules:
        if rule.allows_path(verb, path):
            return rule
    return None


# --- escalation: does one set of rules cover another ----------------------------------------------


def breakdown(rule: Rule) -> list[Rule]:
    """``BreakdownRule``: one rule per (group, resource, verb[, name]) or (URL, verb)."""
    out: list[Rule] = []
    for group in rule.api_groups:
        for resource in rule.resources:
            for verb in rule.verbs:
                if rule.resource_names:
                    out.extend(Rule((verb,), (group,), (resource,), (name,)) for name in rule.resource_names)
                else:
                    out.append(Rule((verb,), (group,), (resource,)))
    for url in rule.non_resource_urls:
        out.extend(Rule((verb,), non_resource_urls=(url,)) for verb in rule.verbs)
    return out


def _has_all(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    return set(wanted) <= set(owned)


def _resources_cover(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    if ALL in owned or _has_all(owned, wanted):
        return True
    for path in wanted:
        if path in owned:
            continue
        if "/" not in path:
            return False
        if "*/" + path.split("/", 1)[1] not in owned:
            return False
    return True


def _urls_cover(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    return all(any(o == w or (o.endswith("*") and w.startswith(o.rstrip("*"))) for o in owned) for w in wanted)


def rule_covers(owner: Rule, sub: Rule) -> bool:
    """``ruleCovers``: whether ``owner`` grants everything the (broken-down) ``sub`` grants."""
    verbs = ALL in owner.verbs or _has_all(owner.verbs, sub.verbs)
    groups = ALL in owner.api_groups or _has_all(owner.api_groups, sub.api_groups)
    resources = _resources_cover(owner.resources, sub.resources)
    urls = _urls_cover(owner.non_resource_urls, sub.non_resource_urls)
    if not sub.resource_names:
        names = not owner.resource_names
    else:
        names = not owner.resource_names or _has_all(owner.resource_names, sub.resource_names)
    return verbs and groups and resources and names and urls


def uncovered(owner_rules: Sequence[Rule], wanted: Iterable[Rule]) -> list[Rule]:
    """The single permissions in ``wanted`` that no rule of ``owner_rules`` covers (``Covers``)."""
    missing: list[Rule] = []
    for rule in wanted:
        for simple in breakdown(rule):
            if not any(rule_covers(owner, simple) for owner in owner_rules):
                missing.append(simple)
    return missing


def compact_rules(rules: Sequence[Rule]) -> list[Rule]:
    """``CompactRules``: simple rules that differ only in their verb become one rule with those verbs."""
    merged: dict[tuple[Any, ...], list[str]] = {}
    shapes: dict[tuple[Any, ...], Rule] = {}
    out_order: list[tuple[Any, ...]] = []
    for rule in rules:
        if len(rule.resources) == 1 and len(rule.api_groups) == 1 and len(rule.resource_names) <= 1 \
                and not rule.non_resource_urls:
            key: tuple[Any, ...] = (rule.api_groups, rule.resources, rule.resource_names)
        else:
            key = ("as-is", len(out_order))
        if key not in merged:
            merged[key] = []
            shapes[key] = rule
            out_order.append(key)
        for verb in rule.verbs:
            if verb not in merged[key]:
                merged[key].append(verb)
    return [Rule(tuple(merged[k]), shapes[k].api_groups, shapes[k].resources, shapes[k].resource_names,
                 shapes[k].non_resource_urls) for k in out_order]


def describe_missing(rules: Sequence[Rule]) -> str:
    """The missing permissions as Kubernetes lists them: compacted, sorted, one per line."""
    return "\n".join(sorted(r.compact() for r in compact_rules(rules)))
