"""Server-side apply: merge, field ownership, removal of fields no longer applied, conflicts, force."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apiserver.managedfields import ApplyConflict, server_side_apply, update_managed_fields
from apiserver.patch import PatchError

RC = "io.k8s.api.core.v1.ReplicationController"
POD = "io.k8s.api.core.v1.Pod"
T0, T1, T2, T3 = "2024-05-01T10:00:00Z", "2024-05-01T10:01:00Z", "2024-05-01T10:02:00Z", "2024-05-01T10:03:00Z"


def rc(*, replicas: int | None = 2, image: str = "nginx", labels: dict[str, str] | None = None,
       containers: list[Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"app": "web"},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": containers if containers is not None else [
                         {"name": "web", "image": image, "ports": [{"containerPort": 80}]}]}},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "v1", "kind": "ReplicationController",
            "metadata": {"name": "web", "labels": labels if labels is not None else {"app": "web"}}, "spec": spec}


def apply(live: dict[str, Any] | None, config: dict[str, Any], manager: str = "kubectl", *, force: bool = False,
          now: str = T0, definition: str = RC, subresource: str | None = None) -> dict[str, Any]:
    return server_side_apply(live, config, definition=definition, manager=manager, api_version="v1", force=force,
                             now=now, subresource=subresource)


def update(old: dict[str, Any], change: Any, manager: str, now: str = T1) -> dict[str, Any]:
    """A non-apply write (kubectl edit, a controller) made with ``change(new)``."""
    new = copy.deepcopy(old)
    change(new)
    update_managed_fields(old, new, definition=RC, manager=manager, api_version="v1", now=now)
    return new


def entry(obj: dict[str, Any], manager: str, operation: str = "Apply") -> dict[str, Any]:
    found = [e for e in obj["metadata"].get("managedFields", ())
             if e["manager"] == manager and e["operation"] == operation]
    assert len(found) == 1, obj["metadata"].get("managedFields")
    only: dict[str, Any] = found[0]
    return only


def managers(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields", ())]


def without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"].pop("managedFields", None)
    return out


def test_create_by_apply_records_what_was_applied() -> None:
    obj = apply(None, rc())
    assert without_managed_fields(obj) == rc()
    assert obj["metadata"]["managedFields"] == [{
        "manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "time": T0, "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:containers": {'k:{"name":"web"}': {
                    ".": {}, "f:image": {}, "f:name": {},
                    "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}},
                }}},
            }},
        },
    }]


def test_fields_v1_is_written_in_kubernetes_order() -> None:
    config = rc(containers=[{"name": "web", "image": "nginx", "ports": [
        {"containerPort": 8080}, {"containerPort": 9, "protocol": "UDP"}, {"containerPort": 10}]}])
    containers = entry(apply(None, config), "kubectl")["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    # "." first, then fields by name, then keys by value: numbers compare as numbers (9 < 10 < 8080).
    assert orjson.dumps(containers).decode() == (
        '{"k:{\\"name\\":\\"web\\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{'
        '"k:{\\"containerPort\\":9,\\"protocol\\":\\"UDP\\"}":{".":{},"f:containerPort":{},"f:protocol":{}},'
        '"k:{\\"containerPort\\":10,\\"protocol\\":\\"TCP\\"}":{".":{},"f:containerPort":{}},'
        '"k:{\\"containerPort\\":8080,\\"protocol\\":\\"TCP\\"}":{".":{},"f:containerPort":{}}}}}'
    )


def test_reapplying_the_same_configuration_changes_nothing() -> None:
    first = apply(None, rc())
    again = apply(first, rc(), now=T1)
    assert again == first


def test_reapply_with_a_change_updates_object_and_time() -> None:
    first = apply(None, rc())
    second = apply(first, rc(image="nginx:2"), now=T1)
    assert second["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert entry(second, "kubectl")["time"] == T1
    assert entry(second, "kubectl")["fieldsV1"] == entry(first, "kubectl")["fieldsV1"]


def test_field_dropped_from_the_configuration_is_removed() -> None:
    first = apply(None, rc(labels={"app": "web", "tier": "fe"}))
    second = apply(first, rc(labels={"app": "web"}, replicas=None), now=T1)
    assert second["metadata"]["labels"] == {"app": "web"}
    assert "replicas" not in second["spec"]
    fields = entry(second, "kubectl")["fieldsV1"]
    assert "f:tier" not in fields["f:metadata"]["f:labels"] and "f:replicas" not in fields["f:spec"]


def test_field_dropped_but_owned_by_another_manager_stays() -> None:
    first = apply(None, rc(labels={"app": "web", "tier": "fe"}))
    shared = apply(first, {"apiVersion": "v1", "kind": "ReplicationController",
                           "metadata": {"name": "web", "labels": {"tier": "fe"}}}, "other", now=T1)
    assert "f:tier" in entry(shared, "other")["fieldsV1"]["f:metadata"]["f:labels"]
    dropped = apply(shared, rc(labels={"app": "web"}), now=T2)
    assert dropped["metadata"]["labels"] == {"app": "web", "tier": "fe"}
    assert "f:tier" not in entry(dropped, "kubectl")["fieldsV1"]["f:metadata"]["f:labels"]


def test_fields_set_by_another_writer_survive_reapply() -> None:
    first = apply(None, rc())
    edited = update(first, lambda o: o["spec"]["template"]["spec"]["containers"][0].update(
        resources={"limits": {"cpu": "500m"}}), "kubectl-edit")
    again = apply(edited, rc(image="nginx:2"), now=T2)
    container = again["spec"]["template"]["spec"]["containers"][0]
    assert container == {"name": "web", "image": "nginx:2", "ports": [{"containerPort": 80}],
                         "resources": {"limits": {"cpu": "500m"}}}


def test_conflict_with_an_updater() -> None:
    first = apply(None, rc())
    scaled = update(first, lambda o: o["spec"].update(replicas=5), "kubectl-client-side-apply")
    with pytest.raises(ApplyConflict) as info:
        apply(scaled, rc(replicas=3), now=T2)
    conflict = info.value
    assert conflict.message() == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .spec.replicas')
    assert conflict.causes() == [{"reason": "FieldManagerConflict",
                                  "message": 'conflict with "kubectl-client-side-apply" using v1',
                                  "field": ".spec.replicas"}]
    assert conflict.conflicts == [("kubectl-client-side-apply", ".spec.replicas")]


def test_applying_the_value_another_manager_set_is_no_conflict_and_shares_ownership() -> None:
    first = apply(None, rc())
    scaled = update(first, lambda o: o["spec"].update(replicas=5), "hpa")
    shared = apply(scaled, rc(replicas=5), now=T2)
    assert "f:replicas" in entry(shared, "kubectl")["fieldsV1"]["f:spec"]
    assert entry(shared, "hpa", "Update")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}


def test_several_conflicts_are_listed_by_manager() -> None:
    first = apply(None, rc())
    one = update(first, lambda o: o["spec"].update(replicas=5), "scaler")
    two = update(one, lambda o: o["spec"]["template"]["spec"]["containers"][0].update(image="x"), "editor", T2)
    with pytest.raises(ApplyConflict) as info:
        apply(two, rc(replicas=3, image="y"), "ci", now=T3)
    assert info.value.message() == (
        'Apply failed with 2 conflicts: conflicts with "editor" using v1:\n'
        '- .spec.template.spec.containers[name="web"].image\n'
        'conflicts with "scaler" using v1:\n'
        "- .spec.replicas"
    )
    assert [c["field"] for c in info.value.causes()] == [
        '.spec.template.spec.containers[name="web"].image', ".spec.replicas"]


def test_conflict_with_another_applier_and_with_a_subresource_writer() -> None:
    first = apply(None, rc())
    other = apply(first, rc(replicas=4), "argo", force=True, now=T1)
    status = copy.deepcopy(other)
    status["status"] = {"replicas": 4}
    update_managed_fields(other, status, definition=RC, manager="rc-controller", api_version="v1", now=T2,
                          subresource="status")
    with pytest.raises(ApplyConflict) as info:
        apply(status, {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
                       "spec": {"replicas": 2}, "status": {"replicas": 1}}, "me", now=T3)
    assert info.value.message() == (
        'Apply failed with 2 conflicts: conflicts with "argo":\n- .spec.replicas\n'
        'conflicts with "rc-controller" with subresource "status" using v1:\n- .status.replicas'
    )


def test_force_takes_ownership() -> None:
    first = apply(None, rc())
    scaled = update(first, lambda o: o["spec"].update(replicas=5), "hpa")
    forced = apply(scaled, rc(replicas=3), force=True, now=T2)
    assert forced["spec"]["replicas"] == 3
    assert managers(forced) == [("kubectl", "Apply")]
    assert "f:replicas" in entry(forced, "kubectl")["fieldsV1"]["f:spec"]


def test_two_appliers_share_a_list_map() -> None:
    web = {"name": "web", "image": "nginx"}
    sidecar = {"name": "sidecar", "image": "envoy"}
    first = apply(None, rc(containers=[web]))
    sidecar_config = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
                      "spec": {"template": {"spec": {"containers": [sidecar]}}}}
    both = apply(first, sidecar_config, "mesh", now=T1)
    assert both["spec"]["template"]["spec"]["containers"] == [web, sidecar]
    assert entry(both, "mesh")["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"] == {
        'k:{"name":"sidecar"}': {".": {}, "f:image": {}, "f:name": {}}}
    # Each re-applies: neither removes the other's element.
    both = apply(both, rc(containers=[{"name": "web", "image": "nginx:2"}]), now=T2)
    both = apply(both, sidecar_config, "mesh", now=T2)
    assert both["spec"]["template"]["spec"]["containers"] == [{"name": "web", "image": "nginx:2"}, sidecar]
    # The mesh stops applying its sidecar: it goes, the web container stays.
    gone = apply(both, {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
                        "spec": {"template": {"spec": {"containers": []}}}}, "mesh", now=T3)
    assert gone["spec"]["template"]["spec"]["containers"] == [{"name": "web", "image": "nginx:2"}]
    assert managers(gone) == [("kubectl", "Apply")]


def test_list_map_element_order_follows_the_applier() -> None:
    a, b, c = ({"name": n, "image": "i"} for n in "abc")
    live = apply(None, rc(containers=[a, b]))
    live = apply(live, {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
                        "spec": {"template": {"spec": {"containers": [c]}}}}, "other", now=T1)
    reordered = apply(live, rc(containers=[b, a]), now=T2)
    # Applied elements come in applied order; "c", which only the other manager has, stays right
    # after "b", the shared element it followed (structured-merge-diff's interleaving).
    assert [x["name"] for x in reordered["spec"]["template"]["spec"]["containers"]] == ["b", "c", "a"]


def test_sets_merge_by_value() -> None:
    def finalizers(*values: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": list(values)}}

    pod = apply(None, finalizers("a.io/x"), "one", definition=POD)
    pod = apply(pod, finalizers("b.io/y"), "two", definition=POD, now=T1)
    assert pod["metadata"]["finalizers"] == ["a.io/x", "b.io/y"]
    assert entry(pod, "two")["fieldsV1"] == {"f:metadata": {"f:finalizers": {'v:"b.io/y"': {}}}}
    pod = apply(pod, finalizers(), "one", definition=POD, now=T2)
    assert pod["metadata"]["finalizers"] == ["b.io/y"]


def test_atomic_map_and_list_are_replaced_whole() -> None:
    def pod(selector: dict[str, str], tolerations: list[dict[str, str]]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"nodeSelector": selector, "tolerations": tolerations}}

    live = apply(None, pod({"a": "1", "b": "2"}, [{"key": "x"}, {"key": "y"}]), definition=POD)
    assert entry(live, "kubectl")["fieldsV1"] == {"f:spec": {"f:nodeSelector": {}, "f:tolerations": {}}}
    again = apply(live, pod({"a": "1"}, [{"key": "y"}]), definition=POD, now=T1)
    assert again["spec"] == {"nodeSelector": {"a": "1"}, "tolerations": [{"key": "y"}]}


def test_port_without_protocol_is_the_element_defaulted_to_tcp() -> None:
    live = apply(None, rc())
    live["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] = "TCP"  # the server's default
    again = apply(live, rc(image="nginx:2"), now=T1)
    assert again["spec"]["template"]["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]


def test_applied_null_owns_the_field_and_unsets_it() -> None:
    live = apply(None, rc())
    cleared = apply(live, {**rc(), "spec": {**rc()["spec"], "replicas": None}}, now=T1)
    assert "replicas" not in cleared["spec"]
    assert "f:replicas" in entry(cleared, "kubectl")["fieldsV1"]["f:spec"]


def test_apply_over_an_untracked_object_conflicts_with_before_first_apply() -> None:
    live = rc()
    live["metadata"].update(uid="u1", resourceVersion="7")
    with pytest.raises(ApplyConflict) as info:
        apply(live, rc(replicas=3))
    assert info.value.conflicts == [("before-first-apply", ".spec.replicas")]
    forced = apply(live, rc(replicas=3), force=True, now=T1)
    assert managers(forced) == [("kubectl", "Apply"), ("before-first-apply", "Update")]
    before = entry(forced, "before-first-apply", "Update")
    assert before["time"] == T1
    assert "f:replicas" not in before["fieldsV1"]["f:spec"] and "f:selector" in before["fieldsV1"]["f:spec"]


def test_apply_to_a_subresource_is_recorded_with_it() -> None:
    live = apply(None, rc())
    status = apply(live, {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
                          "status": {"replicas": 2}}, "rc-controller", subresource="status", now=T1)
    assert entry(status, "rc-controller")["subresource"] == "status"
    assert entry(status, "rc-controller")["fieldsV1"] == {"f:status": {"f:replicas": {}}}


def test_entries_are_ordered_apply_first_then_by_time() -> None:
    live = apply(None, rc(), "b-applier", now=T2)
    live = update(live, lambda o: o["metadata"]["labels"].update(x="1"), "z-updater", T0)
    live = apply(live, {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web",
                                                                                       "labels": {"y": "1"}}},
                 "a-applier", now=T1)
    assert managers(live) == [("a-applier", "Apply"), ("b-applier", "Apply"), ("z-updater", "Update")]


@pytest.mark.parametrize(("config", "code", "message"), [
    pytest.param({**rc(), "metadata": {"name": "web", "managedFields": []}}, 400, "metadata.managedFields must be nil",
                 id="managed-fields-in-config"),
    pytest.param(rc(containers=[{"name": "a"}, {"name": "a", "image": "x"}]), 422,
                 '.spec.template.spec.containers: duplicate entries for key [name="a"]', id="duplicate-key"),
    pytest.param(rc(containers=[{"image": "x"}]), 422,
                 ".spec.template.spec.containers: element 0: associative list with keys has an element that "
                 "omits all key fields ['name']", id="element-without-key"),
    pytest.param(rc(containers=["web"]), 422, "may not have non-map elements", id="element-not-an-object"),
    pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": [{"a": 1}]}}, 422,
                 ".metadata.finalizers: element 0: associative list without keys has an element that's a map",
                 id="set-element-not-a-scalar"),
])
def test_malformed_configurations_are_refused(config: dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(PatchError) as info:
        apply(None, config, definition=POD if config["kind"] == "Pod" else RC)
    assert info.value.code == code
    assert message in info.value.message


def test_apply_patch_must_be_an_object() -> None:
    with pytest.raises(PatchError) as info:
        server_side_apply(None, [], definition=RC, manager="m", api_version="v1",  # type: ignore[arg-type]
                          force=False, now=T0)
    assert (info.value.code, info.value.reason) == (400, "BadRequest")


def test_inputs_are_not_mutated_and_result_shares_nothing() -> None:
    live = apply(None, rc())
    config = rc(labels={"app": "web", "new": "1"})
    live_before, config_before = copy.deepcopy(live), copy.deepcopy(config)
    result = apply(live, config, now=T1)
    assert (live, config) == (live_before, config_before)
    result["spec"]["template"]["spec"]["containers"][0]["image"] = "changed"
    result["metadata"]["labels"]["x"] = "y"
    assert (live, config) == (live_before, config_before)


# Non-empty: an applied "labels: {}" is kept as {} here, where Go's omitempty drops it on a real server.
label_maps = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["1", "2"]), min_size=1,
                             max_size=4)


@settings(max_examples=150, deadline=None)
@given(first=label_maps, other=label_maps, second=label_maps)
def test_labels_end_up_as_the_last_configuration_plus_what_others_own(
        first: dict[str, str], other: dict[str, str], second: dict[str, str]) -> None:
    def labels(values: dict[str, str]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web", "labels": values}}

    obj = apply(None, labels(first))
    obj = apply(obj, labels(other), "other", force=True, now=T1)
    obj = apply(obj, labels(second), force=True, now=T2)
    assert obj["metadata"].get("labels", {}) == {**other, **second}
    assert apply(obj, labels(second), now=T3) == obj


config_keys = st.sampled_from(["metadata", "spec", "template", "containers", "name", "image", "ports", "containerPort",
                               "labels", "replicas", "selector", "managedFields", "status"])
scalars = st.one_of(st.none(), st.booleans(), st.integers(0, 3), st.sampled_from(["web", "x"]))
json_documents = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(config_keys, inner, max_size=3)), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(body=json_documents, force=st.booleans())
def test_any_configuration_gives_an_object_or_a_clear_error(body: Any, force: bool) -> None:
    live = apply(None, rc())
    config = {**body, "apiVersion": "v1", "kind": "ReplicationController"} if isinstance(body, dict) else body
    try:
        result = apply(live, config, "other", force=force, now=T1)
    except ApplyConflict as e:
        assert not force and e.conflicts
    except PatchError as e:
        assert e.code in (400, 422) and e.message
    else:
        assert isinstance(result["metadata"], dict)
