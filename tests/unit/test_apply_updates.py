"""Field ownership recorded by non-apply writes (create, update, patch, status writes)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apiserver.managedfields import update_managed_fields

POD = "io.k8s.api.core.v1.Pod"
T0, T1, T2 = "2024-05-01T10:00:00Z", "2024-05-01T10:01:00Z", "2024-05-01T10:02:00Z"


def pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "default", "uid": "u", "resourceVersion": "1",
                     "creationTimestamp": T0, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
                 "restartPolicy": "Always"},
    }


def create(obj: dict[str, Any], manager: str = "kubectl-create", now: str = T0) -> dict[str, Any]:
    update_managed_fields(None, obj, definition=POD, manager=manager, api_version="v1", now=now)
    return obj


def write(old: dict[str, Any], change: Callable[[dict[str, Any]], Any], manager: str, now: str = T1,
          subresource: str | None = None, api_version: str = "v1") -> dict[str, Any]:
    new = copy.deepcopy(old)
    change(new)
    update_managed_fields(old, new, definition=POD, manager=manager, api_version=api_version, now=now,
                          subresource=subresource)
    return new


def entries(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e.get("subresource", "")): e for e in obj["metadata"].get("managedFields", ())}


def set_status(**status: Any) -> Callable[[dict[str, Any]], None]:
    return lambda o: o.setdefault("status", {}).update(status)


def add_label(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda o: o["metadata"]["labels"].update({key: "x"})


def test_create_owns_every_field_but_type_and_system_metadata() -> None:
    obj = create(pod())
    assert obj["metadata"]["managedFields"] == [{
        "manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": T0,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:containers": {'k:{"name":"web"}': {
                    ".": {}, "f:image": {}, "f:name": {},
                    "f:ports": {".": {}, 'k:{"containerPort":80,"protocol":"TCP"}': {
                        ".": {}, "f:containerPort": {}, "f:protocol": {}}},
                }},
                "f:restartPolicy": {},
            },
        },
    }]


def test_an_update_takes_the_fields_it_changes() -> None:
    obj = create(pod())
    edited = write(obj, lambda o: o["spec"]["containers"][0].update(image="nginx:2"), "kubectl-edit")
    mine = entries(edited)[("kubectl-edit", "")]
    assert mine["fieldsV1"] == {"f:spec": {"f:containers": {'k:{"name":"web"}': {"f:image": {}}}}}
    assert mine["time"] == T1
    creator = entries(edited)[("kubectl-create", "")]
    assert "f:image" not in creator["fieldsV1"]["f:spec"]["f:containers"]['k:{"name":"web"}']
    assert creator["time"] == T0


def test_a_write_that_changes_nothing_changes_no_entry() -> None:
    obj = create(pod())
    same = write(obj, lambda o: o["metadata"].update(resourceVersion="2"), "someone")
    assert same["metadata"]["managedFields"] == obj["metadata"]["managedFields"]


def test_a_repeated_writer_keeps_one_entry_whose_time_moves() -> None:
    obj = create(pod())
    first = write(obj, set_status(phase="Pending"), "kubelet", T1, subresource="status")
    second = write(first, set_status(phase="Running", podIP="10.0.0.1"), "kubelet", T2, subresource="status")
    kubelet = entries(second)[("kubelet", "status")]
    assert kubelet["fieldsV1"] == {"f:status": {"f:phase": {}, "f:podIP": {}}}
    assert kubelet["time"] == T2
    assert len(second["metadata"]["managedFields"]) == 2


def test_removed_fields_leave_every_set_and_empty_entries_go() -> None:
    obj = create(pod())
    labelled = write(obj, lambda o: o["metadata"]["labels"].update(tier="fe"), "labeller")
    unlabelled = write(labelled, lambda o: o["metadata"]["labels"].pop("tier"), "kubectl-edit", T2)
    assert [e["manager"] for e in unlabelled["metadata"]["managedFields"]] == ["kubectl-create"]


def test_status_and_version_make_separate_entries() -> None:
    obj = create(pod())
    obj = write(obj, set_status(phase="Running"), "kubelet", subresource="status")
    obj = write(obj, lambda o: o["metadata"]["labels"].update(x="1"), "kubelet")
    obj = write(obj, lambda o: o["metadata"]["labels"].update(y="1"), "kubelet", api_version="v2")
    keys = [(e["manager"], e["apiVersion"], e.get("subresource")) for e in obj["metadata"]["managedFields"]]
    assert sorted(keys, key=str) == sorted([("kubectl-create", "v1", None), ("kubelet", "v1", "status"),
                                            ("kubelet", "v1", None), ("kubelet", "v2", None)], key=str)


def test_top_level_spec_and_status_are_never_owned_themselves() -> None:
    obj = write(create(pod()), set_status(phase="Pending"), "kubelet", subresource="status")
    assert entries(obj)[("kubelet", "status")]["fieldsV1"] == {"f:status": {"f:phase": {}}}


def test_client_sent_managed_fields_are_kept_on_the_main_resource() -> None:
    obj = create(pod())
    mine = [{"manager": "me", "operation": "Update", "apiVersion": "v1", "time": T0, "fieldsType": "FieldsV1",
             "fieldsV1": {"f:spec": {"f:restartPolicy": {}}}}]
    edited = write(obj, lambda o: o["metadata"].update(managedFields=mine), "editor")
    assert edited["metadata"]["managedFields"] == mine


def test_client_sent_managed_fields_are_ignored_on_a_subresource() -> None:
    obj = create(pod())
    bogus = [{"manager": "me", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {}}]
    status = write(obj, lambda o: (o["metadata"].update(managedFields=bogus), o.update(status={"phase": "Running"})),
                   "kubelet", subresource="status")
    assert [e["manager"] for e in status["metadata"]["managedFields"]] == ["kubectl-create", "kubelet"]


@pytest.mark.parametrize("sent", [
    pytest.param("not a list", id="not-a-list"),
    pytest.param([{"manager": "x", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}],
                 id="unknown-operation"),
    pytest.param([{"manager": "x", "operation": "Update", "fieldsType": "FieldsV1"}], id="no-apiVersion"),
    pytest.param([{"manager": "x", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV2"}],
                 id="unknown-fieldsType"),
])
def test_malformed_sent_managed_fields_fall_back_to_the_stored_ones(sent: Any) -> None:
    obj = create(pod())
    edited = write(obj, lambda o: o["metadata"].update(managedFields=sent), "editor")
    assert edited["metadata"]["managedFields"] == obj["metadata"]["managedFields"]


def test_sending_empty_managed_fields_stops_tracking() -> None:
    obj = create(pod())
    reset = write(obj, lambda o: o["metadata"].update(managedFields=[]), "editor")
    assert "managedFields" not in reset["metadata"]
    later = write(reset, lambda o: o["metadata"]["labels"].update(x="1"), "editor", T2)
    assert "managedFields" not in later["metadata"]


def test_create_with_empty_managed_fields_is_tracked() -> None:
    obj = pod()
    obj["metadata"]["managedFields"] = []
    assert [e["manager"] for e in create(obj)["metadata"]["managedFields"]] == ["kubectl-create"]


def test_an_object_without_metadata_is_left_alone() -> None:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod"}
    update_managed_fields(None, obj, definition=POD, manager="m", api_version="v1", now=T0)
    assert obj == {"apiVersion": "v1", "kind": "Pod"}


def test_empty_manager_is_recorded_as_unknown() -> None:
    assert create(pod(), manager="")["metadata"]["managedFields"][0]["manager"] == "unknown"


def test_more_than_ten_updaters_merge_into_ancient_changes() -> None:
    obj = create(pod(), now="2024-05-01T09:00:00Z")
    for i in range(11):
        obj = write(obj, add_label(f"l{i}"), f"writer-{i:02d}", f"2024-05-01T10:{i:02d}:00Z")
    managers = [e["manager"] for e in obj["metadata"]["managedFields"]]
    # Twelve updaters: the creator and writer-00 merged first, then writer-01 into the same bucket,
    # which takes the time of the last entry merged into it.
    assert managers == ["ancient-changes", *(f"writer-{i:02d}" for i in range(2, 11))]
    ancient = entries(obj)[("ancient-changes", "")]
    assert ancient["time"] == "2024-05-01T10:01:00Z"
    assert set(ancient["fieldsV1"]["f:metadata"]["f:labels"]) == {".", "f:app", "f:l0", "f:l1"}


def test_old_object_and_untouched_entries_are_not_mutated() -> None:
    obj = create(pod())
    before = copy.deepcopy(obj)
    edited = write(obj, lambda o: o["spec"].update(restartPolicy="Never"), "editor")
    assert obj == before
    assert edited["metadata"]["managedFields"][0]["fieldsV1"] != before["metadata"]["managedFields"][0]["fieldsV1"]


writes = st.lists(st.tuples(st.sampled_from(["alice", "bob", "carol"]), st.sampled_from(["a", "b", "c"]),
                            st.sampled_from(["1", "2", None])), max_size=12)


@settings(max_examples=150, deadline=None)
@given(steps=writes)
def test_each_label_is_owned_by_whoever_last_changed_it(steps: list[tuple[str, str, str | None]]) -> None:
    obj = create(pod())
    owner = {"app": "kubectl-create"}
    for manager, key, value in steps:
        labels = obj["metadata"]["labels"]
        if labels.get(key) != value:
            if value is None:
                owner.pop(key, None)
            else:
                owner[key] = manager

        def change(o: dict[str, Any], key: str = key, value: str | None = value) -> None:
            if value is None:
                o["metadata"]["labels"].pop(key, None)
            else:
                o["metadata"]["labels"][key] = value

        obj = write(obj, change, manager)
    owned: dict[str, list[str]] = {}
    for e in obj["metadata"].get("managedFields", ()):
        for field in e["fieldsV1"].get("f:metadata", {}).get("f:labels", {}):
            if field != ".":
                owned.setdefault(field[2:], []).append(e["manager"])
    assert owned == {key: [manager] for key, manager in owner.items()}
