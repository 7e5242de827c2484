"""Audit: Kubernetes' Policy rules, and the rotating log backend."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from apiserver.admission import UserInfo
from apiserver.audit.log import LogBackend
from apiserver.audit.policy import Level, PolicyError, parse_policy
from apiserver.endpoints.requestinfo import request_info

JANE = UserInfo("jane", ("dev", "system:authenticated"))
PROXY = UserInfo("system:kube-proxy", ("system:authenticated",))

POLICY = parse_policy({
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "None", "users": ["system:kube-proxy"], "verbs": ["watch"],
         "resources": [{"group": "", "resources": ["endpoints", "services"]}]},
        {"level": "None", "nonResourceURLs": ["/healthz*", "/version"]},
        {"level": "RequestResponse", "resources": [{"group": "", "resources": ["pods/log", "pods/status"]}]},
        {"level": "Request", "userGroups": ["dev"], "namespaces": ["prod"]},
        {"level": "Metadata", "resources": [{"group": "", "resources": ["secrets"], "resourceNames": ["keep"]}],
         "omitStages": ["ResponseStarted"]},
        {"level": "Metadata"},
    ]})


@pytest.mark.parametrize(("user", "method", "path", "query", "level"), [
    pytest.param(PROXY, "GET", "/api/v1/services", {"watch": "1"}, Level.NONE, id="ignored-watch"),
    pytest.param(JANE, "GET", "/api/v1/services", {"watch": "1"}, Level.METADATA, id="others-watch"),
    pytest.param(JANE, "GET", "/healthz/etcd", {}, Level.NONE, id="url-prefix"),
    pytest.param(JANE, "GET", "/api/v1/namespaces/x/pods/web/log", {}, Level.REQUEST_RESPONSE, id="subresource"),
    pytest.param(JANE, "POST", "/apis/apps/v1/namespaces/prod/deployments", {}, Level.REQUEST, id="group-in-ns"),
    pytest.param(PROXY, "POST", "/apis/apps/v1/namespaces/prod/deployments", {}, Level.METADATA,
                 id="group-not-held"),
    pytest.param(JANE, "GET", "/api/v1/namespaces/x/secrets/keep", {}, Level.METADATA, id="named"),
])
def test_the_first_matching_rule_gives_the_level(user: UserInfo, method: str, path: str, query: dict[str, str],
                                                 level: Level) -> None:
    assert POLICY.evaluate(user, request_info(method, path, query)).level is level


def test_stages_are_omitted_by_the_policy_and_the_rule() -> None:
    decision = POLICY.evaluate(JANE, request_info("GET", "/api/v1/namespaces/x/secrets/keep"))
    assert decision.omit_stages == {"RequestReceived", "ResponseStarted"}


@pytest.mark.parametrize(("doc", "message"), [
    pytest.param({"kind": "Policy", "apiVersion": "v1"}, "apiVersion", id="version"),
    pytest.param({"kind": "Policy", "apiVersion": "audit.k8s.io/v1", "rules": [{"level": "Loud"}]},
                 'Unsupported value: "Loud"', id="level"),
    pytest.param({"kind": "Policy", "apiVersion": "audit.k8s.io/v1",
                  "rules": [{"level": "None", "nonResourceURLs": ["/x"], "resources": [{"group": ""}]}]},
                 "both regular and non-resource", id="both"),
    pytest.param({"kind": "Policy", "apiVersion": "audit.k8s.io/v1", "omitStages": ["Later"], "rules": []},
                 'Invalid value: "Later"', id="stage"),
])
def test_bad_policies_are_refused(doc: dict[str, object], message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        parse_policy(doc)


def test_the_log_rotates_and_keeps_max_backups(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "audit.log"
    backend = LogBackend(str(path), max_size_mb=1, max_backups=2)
    line = orjson.dumps({"kind": "Event", "pad": "x" * 1000}) + b"\n"
    for _ in range(5000):
        backend.write(line)
    backend.close()
    backups = sorted(p.name for p in path.parent.iterdir() if p != path)
    assert len(backups) == 2 and all(name.startswith("audit-") and name.endswith(".log") for name in backups)
    assert path.stat().st_size <= 1024 * 1024
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    for p in path.parent.iterdir():
        assert all(orjson.loads(row)["kind"] == "Event" for row in p.read_bytes().splitlines())


def test_timestamps_and_audit_ids_are_what_kubernetes_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """RFC 3339 UTC with microseconds, the second's text kept across calls but never stale; random v4 UUIDs."""
    import datetime as dt
    import uuid

    from apiserver.audit import filter as audit_filter

    for t in (1_765_061_513.000001, 1_765_061_513.999999, 1_765_061_513.9999996, 1_765_061_514.5):
        monkeypatch.setattr(audit_filter.time, "time", lambda t=t: t)
        expected = dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert audit_filter._now() == expected
    ids = {audit_filter._audit_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(str(uuid.UUID(i)) == i and uuid.UUID(i).version == 4 and uuid.UUID(i).variant == uuid.RFC_4122
               for i in ids)
