"""CustomResourceDefinitions against real etcd and APIServers: served, validated, watched and deleted."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from apiserver import gnostic
from tests import crds, harness
from tests.crds import CRDS, create_crd, delete_crd, unique_group, widget, widget_crd, widget_version
from tests.kube import WatchReader

pytestmark = pytest.mark.integration

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.fixture
def group(api: httpx.Client) -> Iterator[str]:
    """A CRD of Widgets in a group of its own, established; deleted afterwards."""
    g = unique_group()
    create_crd(api, widget_crd(g))
    yield g
    api.delete(f"{CRDS}/widgets.{g}")


def _path(group: str, namespace: str, name: str = "", version: str = "v1", sub: str = "") -> str:
    base = f"/apis/{group}/{version}/namespaces/{namespace}/widgets"
    return "/".join(p for p in (base, name, sub) if p)


def _invalid(r: httpx.Response) -> dict[str, Any]:
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["reason"] == "Invalid"
    return body


# --- the CRD itself --------------------------------------------------------------------------------

def test_a_crd_is_established_and_served_without_a_restart(api: httpx.Client, group: str, namespace: str) -> None:
    crd = api.get(f"{CRDS}/widgets.{group}").json()
    conditions = {c["type"]: c for c in crd["status"]["conditions"]}
    assert conditions["NamesAccepted"]["status"] == "True" and conditions["NamesAccepted"]["reason"] == "NoConflicts"
    assert conditions["Established"]["status"] == "True"
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    assert crd["status"]["acceptedNames"]["listKind"] == "WidgetList"
    assert crd["status"]["storedVersions"] == ["v1"]
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    # Legacy discovery: the group, its version and the resource with its subresources and verbs.
    groups = api.get("/apis").json()["groups"]
    assert any(g["name"] == group and g["preferredVersion"]["version"] == "v1" for g in groups)
    resources = {r["name"]: r for r in api.get(f"/apis/{group}/v1").json()["resources"]}
    assert set(resources) == {"widgets", "widgets/status", "widgets/scale"}
    assert resources["widgets"]["verbs"] == sorted(
        ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"])
    assert resources["widgets"]["shortNames"] == ["wd"] and resources["widgets"]["categories"] == ["all", "tests"]
    assert resources["widgets/scale"]["kind"] == "Scale" and resources["widgets/scale"]["group"] == "autoscaling"
    # Aggregated discovery (what kubectl asks first).
    agg = api.get("/apis", headers={"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
    item = next(i for i in agg.json()["items"] if i["metadata"]["name"] == group)
    res = item["versions"][0]["resources"][0]
    assert res["resource"] == "widgets" and res["scope"] == "Namespaced"
    assert {s["subresource"] for s in res["subresources"]} == {"status", "scale"}
    assert api.post(_path(group, namespace), json=widget("w", group)).status_code == 201


def _etcd_get(cluster: harness.Cluster, *args: str) -> str:
    """What ``etcdctl get`` prints: the tests read etcd as an operator would, beside the APIServer."""
    etcdctl = Path(harness.__file__).resolve().parents[1] / ".venv" / "bin" / "etcdctl"
    return subprocess.run([str(etcdctl), "--endpoints", cluster.etcd.url, "get", *args],
                          capture_output=True, text=True, check=True, timeout=30).stdout


def test_custom_objects_are_stored_under_their_group_and_plural(cluster: harness.Cluster, api: httpx.Client,
                                                                 group: str, namespace: str) -> None:
    assert api.post(_path(group, namespace), json=widget("stored", group)).status_code == 201
    out = _etcd_get(cluster, "--prefix", "--keys-only", f"/registry/{group}/")
    assert f"/registry/{group}/widgets/{namespace}/stored" in out.split()


def test_a_malformed_crd_lists_every_cause(api: httpx.Client) -> None:
    crd = widget_crd("nodot", plural="Widgets", kind="")
    crd["metadata"]["name"] = "wrong"
    crd["spec"]["scope"] = "Sideways"
    v1 = widget_version("v1", storage=False)
    v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["loose"] = {"description": "no type"}
    v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["ref"] = {"$ref": "#/definitions/x"}
    v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["list"] = {"type": "array"}
    v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"].append(
        {"rule": "self.size >"})
    crd["spec"]["versions"] = [v1]
    body = _invalid(api.post(CRDS, json=crd))
    fields = {c["field"] for c in body["details"]["causes"]}
    schema = "spec.versions[0].schema.openAPIV3Schema.properties[spec]"
    assert {"metadata.name", "spec.group", "spec.scope", "spec.names.plural", "spec.names.kind", "spec.versions",
            f"{schema}.properties[loose].type", f"{schema}.properties[ref].$ref",
            f"{schema}.properties[list].items"} <= fields, fields
    message = body["message"]
    assert "must have exactly one version marked as storage version" in message
    assert "must not be empty for specified object fields" in message
    assert "$ref is not supported" in message
    assert "should be a domain with at least one dot" in message
    # The CEL rule is reported once the schema is structural.
    crd = widget_crd(unique_group())
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] \
        .append({"rule": "self.size >"})
    body = _invalid(api.post(CRDS, json=crd))
    assert body["details"]["causes"][0]["field"] == \
        f"{schema}.x-kubernetes-validations[1].rule"
    assert "compilation failed: ERROR: <input>:1:12: Syntax error" in body["message"]


def test_a_rule_kubesim_cannot_run_is_refused_naming_it(api: httpx.Client) -> None:
    crd = widget_crd(unique_group())
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "isSemver(self.color)"}]
    body = _invalid(api.post(CRDS, json=crd))
    assert "isSemver is a Kubernetes CEL function kubesim does not implement" in body["message"]
    assert "isSemver(self.color)" in body["message"]


def test_community_groups_need_the_api_approval_annotation(api: httpx.Client) -> None:
    """CRDs in *.k8s.io and *.kubernetes.io need api-approved.kubernetes.io (KEP 1111), as kubectl users meet it."""
    g = unique_group().replace(".example.com", ".k8s.io")
    field = "metadata.annotations[api-approved.kubernetes.io]"
    body = _invalid(api.post(CRDS, json=widget_crd(g)))
    assert f'{field}: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", ' \
        "see https://github.com/kubernetes/enhancements/pull/1111" in body["message"]
    crd = widget_crd(g)
    crd["metadata"]["annotations"] = {"api-approved.kubernetes.io": "maybe"}
    body = _invalid(api.post(CRDS, json=crd))
    assert f'{field}: Invalid value: "maybe": protected groups must have approval annotation ' \
        '"api-approved.kubernetes.io" with either a URL or a reason starting with "unapproved"' in body["message"]

    def approval(name: str) -> dict[str, Any] | None:
        conds = {c["type"]: c for c in (api.get(f"{CRDS}/{name}").json().get("status") or {}).get("conditions") or ()}
        return conds.get("KubernetesAPIApprovalPolicyConformant")
    crd["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, testing only"}
    create_crd(api, crd)
    cond = approval(f"widgets.{g}")
    assert cond is not None and (cond["status"], cond["reason"], cond["message"]) == (
        "False", "UnapprovedAnnotation", 'not approved: "unapproved, testing only"')
    # An update that leaves the annotation alone is not checked again; one that changes it is.
    crd = api.get(f"{CRDS}/widgets.{g}").json()
    crd["metadata"]["annotations"]["api-approved.kubernetes.io"] = "https://github.com/kubernetes/enhancements/pull/1111"
    assert api.put(f"{CRDS}/widgets.{g}", json=crd).status_code == 200
    harness.wait_for(lambda: (approval(f"widgets.{g}") or {}).get("reason") == "ApprovedAnnotation",
                     message="the approval condition")
    assert (approval(f"widgets.{g}") or {}).get("message") == \
        "approved in https://github.com/kubernetes/enhancements/pull/1111"
    crd = api.get(f"{CRDS}/widgets.{g}").json()
    del crd["metadata"]["annotations"]["api-approved.kubernetes.io"]
    assert f"{field}: Required value" in _invalid(api.put(f"{CRDS}/widgets.{g}", json=crd))["message"]
    delete_crd(api, f"widgets.{g}")
    # Other groups get no such condition.
    other = unique_group()
    create_crd(api, widget_crd(other))
    assert approval(f"widgets.{other}") is None
    delete_crd(api, f"widgets.{other}")


def test_scope_is_immutable(api: httpx.Client, group: str) -> None:
    crd = api.get(f"{CRDS}/widgets.{group}").json()
    crd["spec"]["scope"] = "Cluster"
    body = _invalid(api.put(f"{CRDS}/widgets.{group}", json=crd))
    assert "spec.scope: Invalid value: \"Cluster\": field is immutable" in body["message"]


def test_a_name_held_by_another_crd_is_not_accepted(api: httpx.Client, group: str) -> None:
    other = widget_crd(group, plural="gadgets", kind="Gadget", short_names=("wd",))
    assert api.post(CRDS, json=other).status_code == 201

    def conditions() -> dict[str, Any] | None:
        got = api.get(f"{CRDS}/gadgets.{group}").json()
        conds = {c["type"]: c for c in (got.get("status") or {}).get("conditions") or ()}
        return conds if "NamesAccepted" in conds else None
    conds = harness.wait_for(conditions, message="NamesAccepted")
    assert isinstance(conds, dict)
    assert conds["NamesAccepted"]["status"] == "False"
    assert conds["NamesAccepted"]["reason"] == "ShortNamesConflict"
    assert conds["NamesAccepted"]["message"] == '"wd" is already in use'
    assert conds["Established"]["status"] == "False" and conds["Established"]["reason"] == "NotAccepted"
    assert api.get(f"/apis/{group}/v1/gadgets").status_code == 404
    # A CRD never established is let go at once (it cannot have objects), through the same conditions.
    gone = api.delete(f"{CRDS}/gadgets.{group}").json()
    with WatchReader(str(api.base_url), CRDS, params={
            "watch": "true", "fieldSelector": f"metadata.name=gadgets.{group}",
            "resourceVersion": gone["metadata"]["resourceVersion"]}) as w:
        events = w.wait_until(lambda evs: any(e["type"] == "DELETED" for e in evs))
    _assert_last_terminating(events)


def _assert_last_terminating(events: list[dict[str, Any]]) -> None:
    """A CRD's DELETED event carries it as last stored: deletion in progress, as Kubernetes' finalizer leaves it.

    (Kubernetes' finalizer sets InstanceDeletionCompleted or NeverEstablished in the very
    write that removes its finalizer, which deletes the CRD: that state is never stored.)
    """
    last = next(e["object"] for e in events if e["type"] == "DELETED")
    terminating = {c["type"]: c for c in last["status"]["conditions"]}["Terminating"]
    assert (terminating["status"], terminating["reason"], terminating["message"]) == (
        "True", "InstanceDeletionInProgress", "CustomResource deletion is in progress")
    assert last["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]


# --- verbs ---------------------------------------------------------------------------------------

def test_every_verb(api: httpx.Client, group: str, namespace: str) -> None:
    coll = _path(group, namespace)
    created = api.post(coll, json={**widget("a", group), "metadata": {"name": "a", "labels": {"app": "x"}}})
    assert created.status_code == 201, created.text
    obj = created.json()
    assert obj["metadata"]["generation"] == 1 and obj["spec"]["size"] == 3  # defaulted
    assert api.post(coll, json=widget("b", group, color="blue")).status_code == 201
    assert api.post(coll, json=widget("a", group)).status_code == 409
    got = api.get(_path(group, namespace, "a")).json()
    assert got["kind"] == "Widget" and got["apiVersion"] == f"{group}/v1"
    listed = api.get(coll).json()
    assert listed["kind"] == "WidgetList" and [i["metadata"]["name"] for i in listed["items"]] == ["a", "b"]
    assert [i["metadata"]["name"] for i in api.get(coll, params={"labelSelector": "app=x"}).json()["items"]] == ["a"]
    assert [i["metadata"]["name"] for i in api.get(
        coll, params={"fieldSelector": "spec.color=blue"}).json()["items"]] == ["b"]
    assert api.get(coll, params={"fieldSelector": "spec.size=3"}).status_code == 400
    all_ns = api.get(f"/apis/{group}/v1/widgets").json()
    assert {i["metadata"]["name"] for i in all_ns["items"]} >= {"a", "b"}
    # update, then patches of every kind but strategic merge
    got["spec"]["size"] = 5
    updated = api.put(_path(group, namespace, "a"), json=got)
    assert updated.status_code == 200 and updated.json()["metadata"]["generation"] == 2
    stale = api.put(_path(group, namespace, "a"), json=got)
    assert stale.status_code == 409
    merged = api.patch(_path(group, namespace, "a"), content=json.dumps({"spec": {"size": 6}}),
                       headers={"Content-Type": "application/merge-patch+json"})
    assert merged.status_code == 200 and merged.json()["spec"]["size"] == 6
    patched = api.patch(_path(group, namespace, "a"), content=json.dumps(
        [{"op": "replace", "path": "/spec/color", "value": "green"}]),
        headers={"Content-Type": "application/json-patch+json"})
    assert patched.status_code == 200 and patched.json()["spec"]["color"] == "green"
    smp = api.patch(_path(group, namespace, "a"), content=json.dumps({"spec": {"size": 7}}),
                    headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert smp.status_code == 415 and smp.json()["reason"] == "UnsupportedMediaType"
    assert "application/strategic-merge-patch+json" not in smp.json()["message"]
    # server-side apply merges a list map by its keys from the schema
    applied = api.patch(_path(group, namespace, "c"), params={"fieldManager": "one"},
                        content=json.dumps({**widget("c", group), "spec": {"color": "red",
                                            "ports": [{"name": "http", "port": 80}]}}),
                        headers={"Content-Type": "application/apply-patch+yaml"})
    assert applied.status_code == 201, applied.text
    applied = api.patch(_path(group, namespace, "c"), params={"fieldManager": "two"},
                        content=json.dumps({**widget("c", group), "spec": {"ports": [{"name": "https", "port": 443}]}}),
                        headers={"Content-Type": "application/apply-patch+yaml"})
    assert applied.status_code == 200, applied.text
    assert [p["name"] for p in applied.json()["spec"]["ports"]] == ["http", "https"]
    conflict = api.patch(_path(group, namespace, "c"), params={"fieldManager": "two"},
                         content=json.dumps({**widget("c", group), "spec": {"color": "blue"}}),
                         headers={"Content-Type": "application/apply-patch+yaml"})
    assert conflict.status_code == 409
    # delete and deletecollection
    assert api.delete(_path(group, namespace, "c")).json()["status"] == "Success"
    assert api.get(_path(group, namespace, "c")).status_code == 404
    gone = api.delete(coll, params={"labelSelector": "app=x"}).json()
    assert [i["metadata"]["name"] for i in gone["items"]] == ["a"]
    assert [i["metadata"]["name"] for i in api.get(coll).json()["items"]] == ["b"]


def test_watch_with_selectors_and_bookmarks(cluster: harness.Cluster, api: httpx.Client, group: str,
                                            namespace: str) -> None:
    coll = _path(group, namespace)
    rv = api.get(coll).json()["metadata"]["resourceVersion"]
    with WatchReader(cluster.url, coll, params={"watch": "true", "resourceVersion": rv,
                                                "allowWatchBookmarks": "true", "labelSelector": "app=w"}) as w:
        api.post(coll, json={**widget("w1", group), "metadata": {"name": "w1", "labels": {"app": "w"}}})
        api.post(coll, json=widget("w2", group))
        api.patch(_path(group, namespace, "w1"), content=json.dumps({"metadata": {"labels": {"app": "no"}}}),
                  headers={"Content-Type": "application/merge-patch+json"})
        events = w.wait_until(lambda evs: any(e["type"] == "DELETED" for e in evs))
    typed = [(e["type"], e["object"]["metadata"].get("name")) for e in events if e["type"] != "BOOKMARK"]
    assert typed == [("ADDED", "w1"), ("DELETED", "w1")]
    with WatchReader(cluster.url, coll, params={"watch": "true", "sendInitialEvents": "true",
                                                "resourceVersionMatch": "NotOlderThan",
                                                "allowWatchBookmarks": "true"}) as w:
        events = w.wait_until(lambda evs: any(e["type"] == "BOOKMARK" for e in evs))
    assert {e["object"]["metadata"]["name"] for e in events if e["type"] == "ADDED"} == {"w1", "w2"}
    bookmark = next(e for e in events if e["type"] == "BOOKMARK")
    assert bookmark["object"]["kind"] == "Widget"
    assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


# --- validation, defaulting, pruning ---------------------------------------------------------------

@pytest.mark.parametrize(("spec", "message"), [
    pytest.param({"size": "big"}, 'spec.size: Invalid value: "string": spec.size in body must be of type integer: '
                 '"string"', id="type"),
    pytest.param({"color": "pink"}, 'spec.color: Unsupported value: "pink": supported values: "red", "green", '
                 '"blue"', id="enum"),
    pytest.param({"size": 0}, "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1",
                 id="minimum"),
    pytest.param({"size": 101}, "spec.size: Invalid value: 101: spec.size in body should be less than or equal "
                 "to 100", id="maximum"),
    pytest.param({"ratio": 0}, "spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0",
                 id="exclusive-minimum"),
    pytest.param({"name": "Abc"}, "spec.name: Invalid value: \"Abc\": spec.name in body should match '^[a-z]+$'",
                 id="pattern"),
    pytest.param({"name": "a"}, 'spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long',
                 id="min-length"),
    pytest.param({"name": "abcdefghijk"}, "spec.name: Too long: may not be more than 10 bytes", id="max-length"),
    pytest.param({"when": "yesterday"}, 'spec.when: Invalid value: "yesterday": spec.when in body must be of type '
                 'date-time: "yesterday"', id="format"),
    pytest.param({"port": True}, 'spec.port: Invalid value: "boolean": spec.port in body must be of type '
                 'integer,string: "boolean"', id="int-or-string"),
    pytest.param({"tags": ["a", "b", "a"]}, 'spec.tags[2]: Duplicate value: "a"', id="list-set"),
    pytest.param({"tags": ["a", "b", "c", "d", "e"]}, "spec.tags: Too many: 5: must have at most 4 items",
                 id="max-items"),
    pytest.param({"ports": []}, "spec.ports: Invalid value: 0: spec.ports in body should have at least 1 items",
                 id="min-items"),
    pytest.param({"ports": [{"name": "a"}, {"name": "a", "port": 1}]}, 'spec.ports[1]: Duplicate value: {"name":"a"}',
                 id="list-map"),
    pytest.param({"ports": [{"port": 1}]}, "spec.ports[0].name: Required value", id="required-in-items"),
    pytest.param({"labels": {"a": 1}}, 'spec.labels[a]: Invalid value: "integer": spec.labels[a] in body must be of '
                 'type string: "integer"', id="map-values"),
    pytest.param({"template": {"metadata": {"name": "x"}}}, "spec.template.apiVersion: Required value: must not be "
                 "empty", id="embedded-resource"),
    pytest.param({"size": 10, "maxSize": 5}, 'spec: Invalid value: "object": size 10 is over maxSize',
                 id="cel-message-expression"),
])
def test_schema_violations_name_the_field(api: httpx.Client, group: str, namespace: str, spec: dict[str, Any],
                                          message: str) -> None:
    body = _invalid(api.post(_path(group, namespace), json=widget("bad", group, **spec)))
    assert message in body["message"], body["message"]
    assert body["message"].startswith(f'Widget.{group} "bad" is invalid: ')


def test_every_violation_is_listed_and_rules_wait_for_a_valid_shape(api: httpx.Client, group: str,
                                                                    namespace: str) -> None:
    body = _invalid(api.post(_path(group, namespace), json={
        **widget("bad", group), "spec": {"size": "x", "name": "A", "maxSize": 1}}))
    fields = [c["field"] for c in body["details"]["causes"]]
    assert fields == ["spec.color", "spec.size", "spec.name", "spec.name", "<nil>"]
    assert "some validation rules were not checked because the object was invalid" in body["message"]


def test_nullable_and_null_fields(api: httpx.Client, group: str, namespace: str) -> None:
    r = api.post(_path(group, namespace), json=widget("n", group, note=None, size=None, replicas=None))
    assert r.status_code == 201, r.text
    spec = r.json()["spec"]
    assert spec["note"] is None          # nullable: kept
    assert spec["size"] == 3             # null without nullable: defaulted
    assert "replicas" not in spec        # null without nullable or default: dropped


def test_transition_rules_see_the_old_object(api: httpx.Client, group: str, namespace: str) -> None:
    obj = api.post(_path(group, namespace), json=widget("t", group, immutable="one")).json()
    obj["spec"]["immutable"] = "two"
    body = _invalid(api.put(_path(group, namespace, "t"), json=obj))
    assert 'spec.immutable: Invalid value: "string": immutable is immutable' in body["message"]
    obj["spec"]["immutable"] = "one"
    obj["spec"]["size"] = 9
    assert api.put(_path(group, namespace, "t"), json=obj).status_code == 200


def test_unknown_fields_are_pruned_warned_or_refused(api: httpx.Client, group: str, namespace: str) -> None:
    body = widget("p", group, bogus=1, extra={"anything": {"goes": True}},
                  template={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "junk": 1}, "data": {}})
    body["top"] = 1
    strict = api.post(_path(group, namespace), params={"fieldValidation": "Strict"}, json=body)
    assert strict.status_code == 400
    assert strict.json()["message"] == ('strict decoding error: unknown field "spec.bogus", unknown field '
                                        '"spec.template.metadata.junk", unknown field "top"') or \
        set(strict.json()["message"].removeprefix("strict decoding error: ").split(", ")) == {
            'unknown field "spec.bogus"', 'unknown field "spec.template.metadata.junk"', 'unknown field "top"'}
    warned = api.post(_path(group, namespace), json=body)
    assert warned.status_code == 201
    assert sorted(warned.headers.get_list("warning")) == sorted([
        '299 - "unknown field \\"spec.bogus\\""', '299 - "unknown field \\"spec.template.metadata.junk\\""',
        '299 - "unknown field \\"top\\""'])
    stored = api.get(_path(group, namespace, "p")).json()
    assert "bogus" not in stored["spec"] and "top" not in stored
    assert stored["spec"]["extra"] == {"anything": {"goes": True}}
    assert stored["spec"]["template"]["data"] == {} and "junk" not in stored["spec"]["template"]["metadata"]


def test_defaults_apply_on_read_after_the_schema_changes(api: httpx.Client, group: str, namespace: str) -> None:
    assert api.post(_path(group, namespace), json=widget("d", group)).status_code == 201
    crd = api.get(f"{CRDS}/widgets.{group}").json()
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    props["note"] = {"type": "string", "default": "added later"}
    assert api.put(f"{CRDS}/widgets.{group}", json=crd).status_code == 200
    harness.wait_for(lambda: api.get(_path(group, namespace, "d")).json()["spec"].get("note") == "added later",
                     message="the new default served on read")


# --- subresources ----------------------------------------------------------------------------------

def test_status_and_spec_are_written_separately(api: httpx.Client, group: str, namespace: str) -> None:
    obj = api.post(_path(group, namespace), json={**widget("s", group), "status": {"phase": "ignored"}}).json()
    assert "status" not in obj and obj["metadata"]["generation"] == 1
    obj["status"] = {"phase": "Ready", "replicas": 2}
    obj["spec"]["size"] = 50
    written = api.put(_path(group, namespace, "s", sub="status"), json=obj).json()
    assert written["status"] == {"phase": "Ready", "replicas": 2}
    assert written["spec"]["size"] == 3 and written["metadata"]["generation"] == 1
    written["spec"]["size"] = 4
    written["status"] = {"phase": "Lost"}
    again = api.put(_path(group, namespace, "s"), json=written).json()
    assert again["status"] == {"phase": "Ready", "replicas": 2} and again["metadata"]["generation"] == 2
    bad = api.patch(_path(group, namespace, "s", sub="status"), content=json.dumps({"status": {"replicas": "x"}}),
                    headers={"Content-Type": "application/merge-patch+json"})
    assert "status.replicas in body must be of type integer" in _invalid(bad)["message"]


def test_scale(api: httpx.Client, group: str, namespace: str) -> None:
    api.post(_path(group, namespace), json=widget("sc", group, replicas=1))
    api.patch(_path(group, namespace, "sc", sub="status"),
              content=json.dumps({"status": {"replicas": 1, "selector": "app=sc"}}),
              headers={"Content-Type": "application/merge-patch+json"})
    scale = api.get(_path(group, namespace, "sc", sub="scale")).json()
    assert scale["kind"] == "Scale" and scale["spec"] == {"replicas": 1}
    assert scale["status"] == {"replicas": 1, "selector": "app=sc"}
    scale["spec"]["replicas"] = 3
    assert api.put(_path(group, namespace, "sc", sub="scale"), json=scale).json()["spec"]["replicas"] == 3
    assert api.get(_path(group, namespace, "sc")).json()["spec"]["replicas"] == 3
    patched = api.patch(_path(group, namespace, "sc", sub="scale"), content=json.dumps({"spec": {"replicas": 5}}),
                        headers={"Content-Type": "application/merge-patch+json"})
    assert patched.json()["spec"]["replicas"] == 5


def test_printer_columns(api: httpx.Client, group: str, namespace: str) -> None:
    created = api.post(_path(group, namespace), json=widget("pc", group, size=7))
    assert created.status_code == 201, created.text
    table = api.get(_path(group, namespace), headers={"Accept": TABLE}).json()
    columns = [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]]
    assert columns == [("Name", "string", 0), ("Color", "string", 0), ("Size", "integer", 0),
                       ("Phase", "string", 1), ("Age", "date", 0)]
    assert table["columnDefinitions"][1]["description"] == "The color."
    assert table["columnDefinitions"][2]["description"] == \
        "Custom resource definition column (in JSONPath format): .spec.size"
    name, color, size, phase, age = table["rows"][0]["cells"]
    assert (name, color, size, phase) == ("pc", "red", 7, None) and age.endswith("s")


def test_default_printer_is_name_and_age(api: httpx.Client, namespace: str) -> None:
    g = unique_group()
    crd = widget_crd(g)
    del crd["spec"]["versions"][0]["additionalPrinterColumns"]
    create_crd(api, crd)
    api.post(_path(g, namespace), json=widget("x", g))
    table = api.get(_path(g, namespace), headers={"Accept": TABLE}).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    delete_crd(api, f"widgets.{g}")


# --- versions --------------------------------------------------------------------------------------

def test_versions_share_the_storage_versions_objects(cluster: harness.Cluster, api: httpx.Client,
                                                     namespace: str) -> None:
    g = unique_group()
    create_crd(api, widget_crd(g, versions=[widget_version("v1beta1", storage=False), widget_version("v1")]))
    assert api.get(f"/apis/{g}").json()["preferredVersion"]["version"] == "v1"
    with WatchReader(cluster.url, _path(g, namespace, version="v1beta1"), params={"watch": "true"}) as w:
        created = api.post(_path(g, namespace, version="v1beta1"), json=widget("mv", g, "v1beta1"))
        assert created.status_code == 201 and created.json()["apiVersion"] == f"{g}/v1beta1"
        events = w.wait_for(1)
    assert events[0]["object"]["apiVersion"] == f"{g}/v1beta1"
    assert api.get(_path(g, namespace, "mv")).json()["apiVersion"] == f"{g}/v1"
    listed = api.get(_path(g, namespace, version="v1beta1")).json()
    assert listed["apiVersion"] == f"{g}/v1beta1" and listed["items"][0]["apiVersion"] == f"{g}/v1beta1"
    patched = api.patch(_path(g, namespace, "mv", version="v1beta1"), content=json.dumps({"spec": {"size": 9}}),
                        headers={"Content-Type": "application/merge-patch+json"})
    assert patched.json()["apiVersion"] == f"{g}/v1beta1" and patched.json()["spec"]["size"] == 9
    delete_crd(api, f"widgets.{g}")


AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def _not_found(r: httpx.Response) -> None:
    """kube-apiserver's answer for a path nothing serves (an unserved CRD version goes to its NotFound handler)."""
    assert r.status_code == 404, r.text
    assert r.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": "the server could not find the requested resource", "reason": "NotFound",
                        "details": {}, "code": 404}


def _published_versions(api: httpx.Client, g: str) -> dict[str, list[str]]:
    """The versions of group ``g`` in each place clients learn about versions."""
    legacy = next((gr for gr in api.get("/apis").json()["groups"] if gr["name"] == g), {"versions": []})
    aggregated = next((i for i in api.get("/apis", headers={"Accept": AGGREGATED}).json()["items"]
                       if i["metadata"]["name"] == g), {"versions": []})
    index = api.get("/openapi/v3").json()["paths"]
    swagger = _v2_definitions(api)
    return {
        "apis": [v["version"] for v in legacy["versions"]],
        "group": [v["version"] for v in api.get(f"/apis/{g}").json()["versions"]],
        "aggregated": [v["version"] for v in aggregated["versions"]],
        "openapi/v3": sorted(p.rpartition("/")[2] for p in index if p.startswith(f"apis/{g}/")),
        "openapi/v2": sorted(name.split(".")[-2] for name in swagger
                             if name.startswith(".".join(reversed(g.split(".")))) and name.endswith(".Widget")),
    }


def test_an_unserved_storage_version_keeps_the_objects_and_answers_404(cluster: harness.Cluster,
                                                                       api: httpx.Client, namespace: str) -> None:
    g = unique_group()
    create_crd(api, widget_crd(g, versions=[widget_version("v1", storage=False), widget_version("v2", served=False)]))
    try:
        created = api.post(_path(g, namespace), json=widget("kept", g))
        assert created.status_code == 201 and created.json()["apiVersion"] == f"{g}/v1"
        # Stored as the storage version, read and listed through the served one.
        stored = json.loads(_etcd_get(cluster, "--print-value-only", f"/registry/{g}/widgets/{namespace}/kept"))
        assert stored["apiVersion"] == f"{g}/v2" and stored["spec"]["color"] == "red"
        assert api.get(_path(g, namespace, "kept")).json()["apiVersion"] == f"{g}/v1"
        listed = api.get(_path(g, namespace)).json()
        assert [(i["apiVersion"], i["metadata"]["name"]) for i in listed["items"]] == [(f"{g}/v1", "kept")]
        # The unserved version is not found, whatever is asked of it, as if it did not exist.
        _not_found(api.get(_path(g, namespace, version="v2")))
        _not_found(api.get(f"/apis/{g}/v2/widgets"))
        _not_found(api.get(_path(g, namespace, "kept", version="v2")))
        _not_found(api.get(_path(g, namespace, "kept", version="v2", sub="status")))
        _not_found(api.get(_path(g, namespace, version="v2"), params={"watch": "true"}))
        _not_found(api.post(_path(g, namespace, version="v2"), json=widget("refused", g, "v2")))
        _not_found(api.delete(_path(g, namespace, "kept", version="v2")))
        _not_found(api.get(f"/apis/{g}/v2"))
        _not_found(api.get(f"/openapi/v3/apis/{g}/v2"))
        # Only served versions are published: discovery (legacy and aggregated) and OpenAPI v3 and v2.
        assert _published_versions(api, g) == {"apis": ["v1"], "group": ["v1"], "aggregated": ["v1"],
                                               "openapi/v3": ["v1"], "openapi/v2": ["v1"]}
        assert api.get(f"/apis/{g}").json()["preferredVersion"]["version"] == "v1"
        assert not [p for p in api.get("/openapi/v2", headers={"Accept": "application/json"}).json()["paths"]
                    if p.startswith(f"/apis/{g}/v2/")]
        # Kubernetes names a CRD's storage version hash only from a served storage version.
        widgets = next(r for r in api.get(f"/apis/{g}/v1").json()["resources"] if r["name"] == "widgets")
        assert "storageVersionHash" not in widgets
        # Deleting the CRD deletes the objects kept in the unserved version's keys.
        with WatchReader(cluster.url, _path(g, namespace), params={"watch": "true"}) as w:
            delete_crd(api, f"widgets.{g}")
            assert w.done.wait(10), "the watch did not end"
        assert [e["object"]["metadata"]["name"] for e in w.events if e["type"] == "DELETED"] == ["kept"]
        assert _etcd_get(cluster, "--prefix", "--keys-only", f"/registry/{g}/").split() == []
        _not_found(api.get(_path(g, namespace)))
    finally:
        api.delete(f"{CRDS}/widgets.{g}")  # a failed test leaves no second Widget kind for kubectl to pick


def test_a_storage_version_served_later_serves_the_objects(cluster: harness.Cluster, api: httpx.Client,
                                                           namespace: str) -> None:
    g = unique_group()
    create_crd(api, widget_crd(g, versions=[widget_version("v1", storage=False), widget_version("v2", served=False)]))
    try:
        assert api.post(_path(g, namespace), json=widget("early", g)).status_code == 201
        crd = api.get(f"{CRDS}/widgets.{g}").json()
        crd["spec"]["versions"][1]["served"] = True
        assert api.put(f"{CRDS}/widgets.{g}", json=crd).status_code == 200
        harness.wait_for(lambda: api.get(_path(g, namespace, version="v2")).status_code == 200, message="v2 served")
        listed = api.get(_path(g, namespace, version="v2")).json()
        assert [(i["apiVersion"], i["metadata"]["name"]) for i in listed["items"]] == [(f"{g}/v2", "early")]
        created = api.post(_path(g, namespace, version="v2"), json=widget("late", g, "v2"))
        assert created.status_code == 201, created.text
        assert sorted(i["metadata"]["name"] for i in api.get(_path(g, namespace)).json()["items"]) == ["early", "late"]
        assert _published_versions(api, g) == {"apis": ["v2", "v1"], "group": ["v2", "v1"],
                                               "aggregated": ["v2", "v1"], "openapi/v3": ["v1", "v2"],
                                               "openapi/v2": ["v1", "v2"]}
        assert api.get(f"/apis/{g}").json()["preferredVersion"]["version"] == "v2"
        # Unserved again: gone from every path and document, the objects still there through v1.
        crd = api.get(f"{CRDS}/widgets.{g}").json()
        crd["spec"]["versions"][1]["served"] = False
        assert api.put(f"{CRDS}/widgets.{g}", json=crd).status_code == 200
        harness.wait_for(lambda: api.get(_path(g, namespace, version="v2")).status_code == 404, message="v2 unserved")
        _not_found(api.get(_path(g, namespace, "early", version="v2")))
        assert _published_versions(api, g) == {"apis": ["v1"], "group": ["v1"], "aggregated": ["v1"],
                                               "openapi/v3": ["v1"], "openapi/v2": ["v1"]}
        assert sorted(i["metadata"]["name"] for i in api.get(_path(g, namespace)).json()["items"]) == ["early", "late"]
        delete_crd(api, f"widgets.{g}")
    finally:
        api.delete(f"{CRDS}/widgets.{g}")  # a failed test leaves no second Widget kind for kubectl to pick


def test_webhook_conversion_answers_a_clear_error(api: httpx.Client, namespace: str) -> None:
    g = unique_group()
    crd = widget_crd(g, versions=[widget_version("v1beta1", storage=False), widget_version("v1")])
    crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://127.0.0.1:1/convert"}}}
    create_crd(api, crd)
    assert api.post(_path(g, namespace), json=widget("ok", g)).status_code == 201
    r = api.get(_path(g, namespace, "ok", version="v1beta1"))
    assert r.status_code == 500 and "kubesim does not call conversion webhooks" in r.json()["message"]
    delete_crd(api, f"widgets.{g}")


# --- OpenAPI ---------------------------------------------------------------------------------------

def test_openapi_v3_publishes_the_schema(api: httpx.Client, group: str) -> None:
    index = api.get("/openapi/v3").json()["paths"]
    doc = api.get(index[f"apis/{group}/v1"]["serverRelativeURL"]).json()
    name = ".".join([*reversed(group.split(".")), "v1", "Widget"])
    schema = doc["components"]["schemas"][name]
    assert schema["x-kubernetes-group-version-kind"] == [{"group": group, "kind": "Widget", "version": "v1"}]
    assert schema["properties"]["spec"]["properties"]["size"]["description"] == "How big, from 1 to 100."
    assert schema["properties"]["metadata"]["allOf"][0]["$ref"].endswith("ObjectMeta")
    assert f"/apis/{group}/v1/namespaces/{{namespace}}/widgets/{{name}}/scale" in doc["paths"]
    assert doc["components"]["schemas"][name + "List"]["x-kubernetes-group-version-kind"][0]["kind"] == "WidgetList"


V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


def _v2_definitions(api: httpx.Client) -> dict[str, Any]:
    definitions: dict[str, Any] = api.get("/openapi/v2", headers={"Accept": "application/json"}).json()["definitions"]
    return definitions


def test_openapi_v2_publishes_builtins_and_crds_and_forgets_deleted_ones(api: httpx.Client) -> None:
    g = unique_group()
    name = ".".join([*reversed(g.split(".")), "v1", "Widget"])
    before = api.get("/openapi/v2", headers={"Accept": "application/json"})
    assert before.status_code == 200 and before.headers["content-type"] == "application/json"
    definitions = before.json()["definitions"]
    assert definitions["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}]
    assert definitions["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"]["$ref"] == (
        "#/definitions/io.k8s.api.apps.v1.DeploymentSpec")
    assert name not in definitions

    create_crd(api, widget_crd(g))
    # Served means published: the APIServer that serves a CRD has it in v2 at once.
    after = api.get("/openapi/v2", headers={"If-None-Match": before.headers["etag"]})
    assert after.status_code == 200 and after.headers["etag"] != before.headers["etag"]
    doc = after.json()
    widget_def = doc["definitions"][name]
    assert widget_def["x-kubernetes-group-version-kind"] == [{"group": g, "kind": "Widget", "version": "v1"}]
    spec = widget_def["properties"]["spec"]
    assert spec["properties"]["size"]["description"] == "How big, from 1 to 100."
    assert "default" not in spec["properties"]["size"] and spec["properties"]["note"] == {}
    assert doc["definitions"][name + "List"]["x-kubernetes-group-version-kind"][0]["kind"] == "WidgetList"
    item = doc["paths"][f"/apis/{g}/v1/namespaces/{{namespace}}/widgets/{{name}}"]
    assert (item["get"]["x-kubernetes-action"], item["get"]["operationId"]) == ("get", f"read{_infix(g)}NamespacedWidget")
    assert item["patch"]["x-kubernetes-group-version-kind"] == {"group": g, "kind": "Widget", "version": "v1"}
    # The protobuf form kubectl reads has the same definitions under the same ETag.
    pb = api.get("/openapi/v2", headers={"Accept": V2_PROTOBUF})
    assert pb.headers["content-type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    assert pb.headers["etag"] == after.headers["etag"]
    message: Any = gnostic.from_protobuf(pb.content)
    assert [d.name for d in message.definitions.additional_properties] == sorted(doc["definitions"])
    assert api.get("/openapi/v2", headers={"Accept": V2_PROTOBUF,
                                           "If-None-Match": pb.headers["etag"]}).status_code == 304

    delete_crd(api, f"widgets.{g}")
    harness.wait_for(lambda: name not in _v2_definitions(api), timeout=10, message="the CRD gone from /openapi/v2")
    gone = api.get("/openapi/v2", headers={"Accept": "application/json"}).json()
    assert name + "List" not in gone["definitions"] and not [p for p in gone["paths"] if f"/{g}/" in p]
    assert "io.k8s.api.core.v1.Pod" in gone["definitions"]


def _infix(group: str) -> str:
    """How Kubernetes names a group-version in operation IDs (``example.com`` v1 -> ``ExampleComV1``)."""
    return "".join(p[:1].upper() + p[1:] for p in group.split(".")) + "V1"


# --- deletion --------------------------------------------------------------------------------------

def test_deleting_a_crd_removes_its_objects_and_ends_its_watches(cluster: harness.Cluster, api: httpx.Client,
                                                                  namespace: str) -> None:
    g = unique_group()
    create_crd(api, widget_crd(g))
    for i in range(5):
        assert api.post(_path(g, namespace), json=widget(f"o{i}", g)).status_code == 201
    # One object holds a finalizer of its own: the CRD waits for it.
    api.post(_path(g, namespace), json={**widget("held", g), "metadata": {"name": "held", "finalizers": ["x/y"]}})
    with WatchReader(cluster.url, _path(g, namespace), params={"watch": "true"}) as w, \
            WatchReader(cluster.url, CRDS, params={"watch": "true",
                                                   "fieldSelector": f"metadata.name=widgets.{g}"}) as crd_watch:
        w.wait_for(6)
        r = api.delete(f"{CRDS}/widgets.{g}")
        assert r.status_code == 200
        crd = r.json()
        assert "customresourcecleanup.apiextensions.k8s.io" in crd["metadata"]["finalizers"]
        terminating = {c["type"]: c for c in crd["status"]["conditions"]}["Terminating"]
        assert (terminating["status"], terminating["reason"], terminating["message"]) == (
            "True", "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon")
        # The APIServer learns of the deletion through its CRD watch, as kube-apiserver's handler reads its
        # informer: a create a moment after the DELETE may still be accepted (and is cleaned up with the rest).
        accepted: list[str] = []

        def create_late() -> httpx.Response | None:
            name = f"late{len(accepted)}"
            r = api.post(_path(g, namespace), json=widget(name, g))
            if r.status_code == 201:
                accepted.append(name)
                return None
            return r
        refused = harness.wait_for(create_late, message="creates refused")
        assert isinstance(refused, httpx.Response)
        assert refused.status_code == 405, refused.text
        assert refused.json()["message"] == "create not allowed while custom resource definition is terminating"
        harness.wait_for(lambda: [i["metadata"]["name"] for i in api.get(_path(g, namespace)).json()["items"]]
                         == ["held"], message="every object but the held one deleted")
        crd = api.get(f"{CRDS}/widgets.{g}").json()
        terminating = {c["type"]: c for c in crd["status"]["conditions"]}["Terminating"]
        assert (terminating["status"], terminating["reason"], terminating["message"]) == (
            "True", "InstanceDeletionInProgress", "CustomResource deletion is in progress")
        api.patch(_path(g, namespace, "held"), content=json.dumps({"metadata": {"finalizers": None}}),
                  headers={"Content-Type": "application/merge-patch+json"})
        harness.wait_for(lambda: api.get(f"{CRDS}/widgets.{g}").status_code == 404, message="the CRD gone")
        assert w.done.wait(10), "the watch did not end"
        crd_events = crd_watch.wait_until(lambda evs: any(e["type"] == "DELETED" for e in evs))
    _assert_last_terminating(crd_events)
    deleted = [e["object"]["metadata"]["name"] for e in w.events if e["type"] == "DELETED"]
    assert sorted(deleted) == sorted(["held", "o0", "o1", "o2", "o3", "o4", *accepted])
    assert api.get(_path(g, namespace)).status_code == 404
    assert api.get(f"/apis/{g}/v1").status_code == 404
    assert all(gr["name"] != g for gr in api.get("/apis").json()["groups"])


def test_a_list_during_deletion_ends_cleanly(api: httpx.Client, namespace: str) -> None:
    g = unique_group()
    create_crd(api, widget_crd(g))
    for i in range(20):
        api.post(_path(g, namespace), json=widget(f"l{i}", g))
    codes: list[int] = []
    stop = threading.Event()

    def lister() -> None:
        with harness.admin_client(str(api.base_url), timeout=10) as c:
            while not stop.is_set():
                codes.append(c.get(_path(g, namespace)).status_code)
    t = threading.Thread(target=lister)
    t.start()
    delete_crd(api, f"widgets.{g}")
    time.sleep(0.2)
    stop.set()
    t.join(10)
    assert codes and set(codes) <= {200, 404} and codes[-1] == 404


# --- bad input -------------------------------------------------------------------------------------

def _deep_schema(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        node = {"type": "object", "properties": {"n": node}}
    return node


@pytest.mark.parametrize("schema", [
    pytest.param({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        f"p{i}": {"type": "integer", "description": f"property {i}"} for i in range(10_000)}}}}, id="10000-properties"),
    pytest.param({"type": "object", "properties": {"spec": _deep_schema(100)}}, id="100-levels"),
    pytest.param({"type": "object", "properties": {"spec": _deep_schema(90)}}, id="90-levels"),
])
def test_huge_and_deep_schemas_are_answered_promptly(api: httpx.Client, namespace: str,
                                                     schema: dict[str, Any]) -> None:
    g = unique_group()
    crd = widget_crd(g, versions=[{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}])
    started = time.monotonic()
    r = api.post(CRDS, json=crd, timeout=30)
    took = time.monotonic() - started
    print(f"CRD with a {len(r.content)}-byte answer: {r.status_code} in {took:.3f}s")
    if r.status_code == 400 and "levels deep" in r.json()["message"]:
        # The APIServer's limit on how deep a request body may nest (decodelimits.MAX_DEPTH, 200)
        # refused it at once with a clear Status: that is an answer too.
        assert "p0" not in schema["properties"]["spec"].get("properties", {})
        return
    assert r.status_code == 201, r.text[:500]
    create_crd_wait = crds.established
    harness.wait_for(lambda: create_crd_wait(api.get(f"{CRDS}/widgets.{g}").json()), message="established")
    obj: dict[str, Any] = {"apiVersion": f"{g}/v1", "kind": "Widget", "metadata": {"name": "x"}}
    if "p0" in schema["properties"]["spec"]["properties"]:
        obj["spec"] = {"p0": 1, "p9999": "nine"}
        assert "spec.p9999 in body must be of type integer" in _invalid(api.post(_path(g, namespace), json=obj,
                                                                                 timeout=30))["message"]
    else:
        levels = 0
        node = schema["properties"]["spec"]
        while "properties" in node:
            node, levels = node["properties"]["n"], levels + 1
        leaf: dict[str, Any] = {"n": "deep"}
        for _ in range(levels - 1):
            leaf = {"n": leaf}
        obj["spec"] = leaf
        assert api.post(_path(g, namespace), json=obj, timeout=30).status_code == 201
    # The APIServer keeps answering (its etcd probe may have missed one beat while the CRD compiled).
    harness.wait_for(lambda: api.get("/readyz").status_code == 200, timeout=5, message="ready")
    delete_crd(api, f"widgets.{g}")


# --- several APIServers ----------------------------------------------------------------------------

def test_every_apiserver_serves_a_new_crd(fresh_cluster: harness.Cluster) -> None:
    second = harness.start_apiserver(fresh_cluster.etcd.url, fresh_cluster.workdir)
    try:
        with harness.admin_client(fresh_cluster.url, timeout=10) as one, \
                harness.admin_client(second.url, timeout=10) as two:
            g = unique_group()
            started = time.monotonic()
            assert one.post(CRDS, json=widget_crd(g)).status_code == 201
            harness.wait_for(lambda: two.get(f"/apis/{g}/v1/widgets").status_code == 200, timeout=10,
                             message="the second APIServer serving the CRD")
            print(f"second APIServer served the new CRD after {time.monotonic() - started:.2f}s")
            # Each APIServer publishes the CRDs it serves in its own OpenAPI v2 document.
            definition = ".".join([*reversed(g.split(".")), "v1", "Widget"])
            assert definition in _v2_definitions(two)
            assert two.post(_path(g, "default"), json=widget("from-two", g)).status_code == 201
            assert one.get(_path(g, "default", "from-two")).status_code == 200
            assert two.delete(f"{CRDS}/widgets.{g}").status_code == 200
            harness.wait_for(lambda: one.get(f"/apis/{g}/v1/widgets").status_code == 404 and
                             two.get(f"/apis/{g}/v1/widgets").status_code == 404, timeout=20,
                             message="both APIServers stopped serving it")
            assert definition not in _v2_definitions(one) and definition not in _v2_definitions(two)
    finally:
        second.process.stop()


def test_an_apiserver_started_later_serves_existing_crds(fresh_cluster: harness.Cluster) -> None:
    with harness.admin_client(fresh_cluster.url, timeout=10) as one:
        g = unique_group()
        create_crd(one, widget_crd(g))
        assert one.post(_path(g, "default"), json=widget("kept", g)).status_code == 201
    later = harness.start_apiserver(fresh_cluster.etcd.url, fresh_cluster.workdir)
    try:
        with harness.admin_client(later.url, timeout=10) as two:
            harness.wait_for(lambda: two.get(_path(g, "default", "kept")).status_code == 200, timeout=10,
                             message="the later APIServer serving the stored object")
    finally:
        later.process.stop()


def test_objects_stored_before_a_storage_version_change_read_in_the_new_one(api: httpx.Client,
                                                                             namespace: str) -> None:
    g = unique_group()
    create_crd(api, widget_crd(g, versions=[widget_version("v1beta1"), widget_version("v1", storage=False)]))
    assert api.post(_path(g, namespace, version="v1beta1"), json=widget("old", g, "v1beta1")).status_code == 201
    crd = api.get(f"{CRDS}/widgets.{g}").json()
    for v in crd["spec"]["versions"]:
        v["storage"] = v["name"] == "v1"
    assert api.put(f"{CRDS}/widgets.{g}", json=crd).status_code == 200
    harness.wait_for(lambda: api.get(f"{CRDS}/widgets.{g}").json()["status"]["storedVersions"] == ["v1beta1", "v1"],
                     message="both stored versions recorded")
    harness.wait_for(lambda: api.get(_path(g, namespace, "old")).json().get("apiVersion") == f"{g}/v1",
                     message="the old object served as v1")
    assert [i["apiVersion"] for i in api.get(_path(g, namespace)).json()["items"]] == [f"{g}/v1"]
    delete_crd(api, f"widgets.{g}")


def test_admission_applies_to_custom_objects(api: httpx.Client, group: str) -> None:
    r = api.post(_path(group, "no-such-namespace"), json=widget("x", group))
    assert r.status_code == 404 and r.json()["message"] == 'namespaces "no-such-namespace" not found'


def test_cluster_scoped_custom_resources(api: httpx.Client) -> None:
    g = unique_group()
    create_crd(api, widget_crd(g, scope="Cluster"))
    coll = f"/apis/{g}/v1/widgets"
    created = api.post(coll, json=widget("c", g))
    assert created.status_code == 201 and "namespace" not in created.json()["metadata"]
    assert api.get(f"{coll}/c").status_code == 200
    assert api.get(f"/apis/{g}/v1/namespaces/default/widgets").status_code == 404
    delete_crd(api, f"widgets.{g}")


def test_unchanged_values_are_ratcheted_when_the_schema_gets_stricter(api: httpx.Client, group: str,
                                                                       namespace: str) -> None:
    obj = api.post(_path(group, namespace), json=widget("r", group, size=50)).json()
    crd = api.get(f"{CRDS}/widgets.{group}").json()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"][
        "maximum"] = 10
    assert api.put(f"{CRDS}/widgets.{group}", json=crd).status_code == 200

    def refused() -> bool:
        return api.post(_path(group, namespace), json=widget("probe", group, size=50)).status_code == 422
    harness.wait_for(refused, message="the stricter schema served")
    obj = api.get(_path(group, namespace, "r")).json()
    obj["spec"]["color"] = "blue"  # size (50, now invalid) is left as it was: allowed
    assert api.put(_path(group, namespace, "r"), json=obj).status_code == 200, "ratcheting"
    obj = api.get(_path(group, namespace, "r")).json()
    obj["spec"]["size"] = 40  # changed, and still invalid: refused
    body = _invalid(api.put(_path(group, namespace, "r"), json=obj))
    assert "spec.size in body should be less than or equal to 10" in body["message"]
