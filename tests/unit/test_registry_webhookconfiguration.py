"""The strategy and printer that Mutating- and ValidatingWebhookConfigurations share, through their registrations.

The two kinds are served by one parameterised strategy: these tests check that the
mutating flag reaches defaulting and validation (only mutating webhooks get a
``reinvocationPolicy``) and that both print kubectl's Name / Webhooks / Age columns.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from apiserver import printers
from apiserver.registry.groups import builtin_resources
from apiserver.registry.resource import Resource

Obj = dict[str, Any]
NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
HOOK: Obj = {"name": "a.b.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
             "clientConfig": {"url": "https://hooks.example.com/check"}}


def resource(plural: str) -> Resource:
    return next(r for r in builtin_resources()
                if r.info.group == "admissionregistration.k8s.io" and r.info.plural == plural)


def configuration(*hooks: Obj) -> Obj:
    return {"metadata": {"name": "c", "creationTimestamp": "2024-05-01T11:55:00Z", "generation": 1},
            "webhooks": [copy.deepcopy(h) for h in hooks]}


@pytest.mark.parametrize("plural, reinvocation", [
    pytest.param("mutatingwebhookconfigurations", "Never", id="mutating"),
    pytest.param("validatingwebhookconfigurations", None, id="validating"),
])
def test_defaulting_follows_the_kind(plural: str, reinvocation: str | None) -> None:
    strategy = resource(plural).strategy
    assert strategy is not None
    obj = configuration(HOOK)
    strategy.default(obj)
    hook = obj["webhooks"][0]
    assert (hook.get("failurePolicy"), hook.get("timeoutSeconds")) == ("Fail", 10)
    assert hook.get("reinvocationPolicy") == reinvocation
    assert strategy.validate(obj) == []


@pytest.mark.parametrize("plural, fields", [
    pytest.param("mutatingwebhookconfigurations", ["webhooks[0].reinvocationPolicy"], id="mutating-checks-it"),
    pytest.param("validatingwebhookconfigurations", [], id="validating-has-no-such-field"),
])
def test_reinvocation_policy_is_validated_only_when_mutating(plural: str, fields: list[str]) -> None:
    strategy = resource(plural).strategy
    assert strategy is not None
    obj = configuration({**HOOK, "reinvocationPolicy": "Sometimes"})
    assert [e.field for e in strategy.validate(obj)] == fields


@pytest.mark.parametrize("plural", ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"])
def test_both_kinds_print_name_webhooks_age(plural: str) -> None:
    printer = resource(plural).printer
    assert printer is not None
    out = printers.table_for(printer, [configuration(HOOK, {**HOOK, "name": "c.d.example.com"})], now=NOW)
    assert [c["name"] for c in out["columnDefinitions"]] == ["Name", "Webhooks", "Age"]
    assert out["rows"][0]["cells"] == ["c", 2, "5m"]
