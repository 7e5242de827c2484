"""Strategic merge patch, as apimachinery's strategicpatch package applies it.

Most cases are Kubernetes' own (``pkg/util/strategicpatch/patch_test.go``:
the three-way patch applied to the current object gives the result), moved from
its test-only types onto real fields: its ``mergingList`` is ``spec.containers``
(merge key ``name``; ``value`` is ``image``, ``other`` is ``workingDir``), its
``mergingIntList`` is ``metadata.finalizers``, its ``nonMergingList`` is
``spec.tolerations``, its ``retainKeysMap`` is a Deployment's ``spec.strategy``
and its ``retainKeysMergingList`` is ``spec.volumes``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apiserver.patch import PatchError, apply_strategic_merge_patch

POD = "io.k8s.api.core.v1.Pod"
DEPLOYMENT = "io.k8s.api.apps.v1.Deployment"
RC = "io.k8s.api.core.v1.ReplicationController"


def c(name: str, image: str | None = None, wd: str | None = None, **extra: Any) -> dict[str, Any]:
    """A container: Kubernetes' test element ``{name, value, other}``."""
    out: dict[str, Any] = {"name": name}
    if image is not None:
        out["image"] = image
    if wd is not None:
        out["workingDir"] = wd
    out.update(extra)
    return out


def containers(*items: Any, **directives: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for key, value in directives.items():
        spec[key.replace("order", "$setElementOrder/containers")] = [{"name": n} for n in value]
    spec["containers"] = list(items)
    return {"spec": spec}


def order(*names: str) -> list[dict[str, str]]:
    return [{"name": n} for n in names]


def fin(*values: str) -> dict[str, Any]:
    return {"metadata": {"finalizers": list(values)}}


CASES = [
    # --- maps and scalars
    pytest.param(POD, {"spec": {"restartPolicy": "Always"}}, {"spec": {"restartPolicy": "Never"}},
                 {"spec": {"restartPolicy": "Never"}}, id="scalar-replaced"),
    pytest.param(POD, {"metadata": {"labels": {"a": "1", "b": "2"}}}, {"metadata": {"labels": {"a": None}}},
                 {"metadata": {"labels": {"b": "2"}}}, id="null-deletes-map-key"),
    pytest.param(POD, {"metadata": {"labels": {"a": "1"}}}, {"metadata": {"labels": {"zz": None}}},
                 {"metadata": {"labels": {"a": "1"}}}, id="null-for-absent-key-is-ignored"),
    pytest.param(POD, {"metadata": {"labels": {"a": "1"}}}, {"metadata": {"annotations": {"x": "y", "n": None}}},
                 {"metadata": {"labels": {"a": "1"}, "annotations": {"x": "y"}}}, id="new-map-drops-nulls"),
    pytest.param(POD, {"metadata": {"labels": {"a": "1", "b": "2"}}},
                 {"metadata": {"labels": {"$patch": "delete"}}}, {"metadata": {"labels": {}}},
                 id="k8s-delete-map-from-nested-map"),
    pytest.param(POD, {"metadata": {"labels": {"a": "1", "b": "2"}}},
                 {"metadata": {"labels": {"$patch": "replace", "c": "3"}}}, {"metadata": {"labels": {"c": "3"}}},
                 id="k8s-add-key-and-delete-all-keys-from-map"),
    pytest.param(POD, {"metadata": {"name": "x"}, "spec": {"restartPolicy": "Always"}}, {"$patch": "replace"},
                 {}, id="k8s-delete-all-keys-from-map"),
    pytest.param(POD, {"spec": {"nodeSelector": {"a": "1"}}}, {"spec": {"newField": {"b": {"c": 1}}}},
                 {"spec": {"nodeSelector": {"a": "1"}, "newField": {"b": {"c": 1}}}},
                 id="unknown-field-added"),
    pytest.param(POD, {"spec": {"futureField": {"a": 1, "b": [1, 2]}}},
                 {"spec": {"futureField": {"a": None, "b": [3], "c": 2}}},
                 {"spec": {"futureField": {"b": [3], "c": 2}}}, id="unknown-field-merges-like-merge-patch"),
    # --- lists without a merge strategy are replaced
    pytest.param(POD, {"spec": {"tolerations": [{"key": "a", "operator": "Exists"}]}},
                 {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}},
                 {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}, id="atomic-tolerations-replaced"),
    pytest.param(POD, containers(c("1", args=["a", "b"])), containers(c("1", args=["c"])),
                 containers(c("1", args=["c"])), id="k8s-replace-non-merging-list-nested-in-merging-list"),
    # --- lists of maps merged by merge key
    pytest.param(POD, containers(c("1", wd="a"), c("2", "2", "b")),
                 containers(c("4", "4"), c("3", "3"), order=["4", "1", "2", "3"]),
                 containers(c("4", "4"), c("1", wd="a"), c("2", "2", "b"), c("3", "3")),
                 id="k8s-merge-lists-of-maps"),
    pytest.param(POD, containers(c("1", wd="a"), c("2", wd="b")),
                 containers(c("1", "1"), order=["1", "2"]),
                 containers(c("1", "1", "a"), c("2", wd="b")), id="k8s-add-field-to-map-in-merging-list"),
    pytest.param(POD, containers(c("1", "1", "a"), c("2", "2", "b")),
                 containers(c("1", "a"), order=["1", "2"]),
                 containers(c("1", "a", "a"), c("2", "2", "b")), id="k8s-replace-map-field-value-in-merging-list"),
    pytest.param(POD, containers(c("1", "1", "a"), c("2", "2")),
                 containers({"name": "1", "image": None}, order=["1", "2"]),
                 containers(c("1", wd="a"), c("2", "2")), id="k8s-delete-field-from-map-in-merging-list"),
    pytest.param(POD, containers(c("1", "1", "a"), c("2", "2", "b")),
                 containers({"name": "1", "$patch": "delete"}, order=["2"]),
                 containers(c("2", "2", "b")), id="k8s-delete-map-from-merging-list"),
    pytest.param(POD, containers(c("2", "2", "b")),
                 containers({"name": "1", "$patch": "delete"}, order=["2"]),
                 containers(c("2", "2", "b")), id="k8s-delete-missing-map-from-merging-list"),
    pytest.param(POD, containers(c("1"), c("2", wd="b"), c("4", wd="c")),
                 containers(c("3"), {"name": "1", "$patch": "delete"}, order=["2", "3"]),
                 containers(c("2", wd="b"), c("4", wd="c"), c("3")),
                 id="k8s-add-map-and-delete-map-from-merging-list"),
    pytest.param(POD, containers(c("1"), c("1"), c("2", "a"), c("3"), c("3")),
                 containers({"name": "1", "$patch": "delete"}, {"name": "3", "$patch": "delete"}),
                 containers(c("2", "a")), id="k8s-delete-all-duplicate-entries-in-a-merging-list"),
    pytest.param(POD, containers(c("1"), c("2")), {"spec": {"containers": [{"$patch": "replace"}]}},
                 containers(), id="k8s-delete-all-items-from-merging-list"),
    pytest.param(POD, containers(c("1"), c("2")),
                 {"spec": {"containers": [c("3"), {"$patch": "replace"}]}},
                 containers(c("3")), id="replace-directive-in-list-keeps-only-patch-elements"),
    pytest.param(POD, containers(), containers(), containers(), id="k8s-merge-empty-merging-lists"),
    pytest.param(POD, containers(c("1"), c("2")),
                 {"spec": {"$setElementOrder/containers": order("3"), "containers": [{"$patch": "replace"}, c("3")]}},
                 containers(c("3")), id="replace-directive-with-setElementOrder"),
    pytest.param(POD, containers(c("1", env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])),
                 containers(c("1", env=[{"name": "B", "value": "3"}, {"name": "C", "value": "4"}])),
                 containers(c("1", env=[{"name": "A", "value": "1"}, {"name": "B", "value": "3"},
                                        {"name": "C", "value": "4"}])),
                 id="k8s-add-field-to-map-in-merging-list-nested-in-merging-list"),
    pytest.param(POD, {"spec": {"containers": [c("web", ports=[{"containerPort": 80, "name": "http"}])]}},
                 {"spec": {"containers": [c("web", ports=[{"containerPort": 80, "protocol": "TCP"}])]}},
                 {"spec": {"containers": [c("web", ports=[{"containerPort": 80, "name": "http",
                                                          "protocol": "TCP"}])]}},
                 id="ports-merged-by-containerPort"),
    pytest.param(POD, {"status": {"conditions": [{"type": "Ready", "status": "False"},
                                                 {"type": "PodScheduled", "status": "True"}]}},
                 {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                 {"status": {"conditions": [{"type": "Ready", "status": "True"},
                                            {"type": "PodScheduled", "status": "True"}]}},
                 id="conditions-merged-by-type"),
    # --- element order
    pytest.param(POD, containers(c("1"), c("2", "b"), c("3")),
                 containers(c("3", "c"), c("1", "a"), c("2", wd="x")),
                 containers(c("3", "c"), c("1", "a"), c("2", "b", "x")),
                 id="k8s-preserve-the-order-from-the-patch-in-a-merging-list"),
    pytest.param(POD, containers(c("1"), c("2", "b"), c("3")),
                 containers(c("3", "c"), c("1", "a")),
                 containers(c("2", "b"), c("3", "c"), c("1", "a")),
                 id="k8s-preserve-the-order-from-the-patch-in-a-merging-list-2"),
    pytest.param(POD, containers(c("1"), c("3")), containers(c("3", "3"), c("1", "1"), order=["3", "2", "1"]),
                 containers(c("3", "3"), c("1", "1")),
                 id="k8s-setElementOrder-contains-item-not-in-the-list"),
    pytest.param(POD, containers(c("1", wd="a"), c("3", "3"), c("4", "4"), c("2", "2")),
                 {"spec": {"$setElementOrder/containers": order("4", "2", "3", "1")}},
                 containers(c("4", "4"), c("2", "2"), c("3", "3"), c("1", wd="a")),
                 id="k8s-set-elements-order-in-a-list"),
    pytest.param(POD, containers(c("1", wd="a"), c("3", "3"), c("4", "4"), c("2", "2"), c("9")),
                 {"spec": {"$setElementOrder/containers": order("4", "2", "3", "1")}},
                 containers(c("4", "4"), c("2", "2"), c("3", "3"), c("1", wd="a"), c("9")),
                 id="k8s-set-elements-order-in-a-list-with-server-only-items"),
    pytest.param(POD, containers(c("1", wd="a"), c("2", "2"), c("9"), c("3", "3"), c("4", "4")),
                 {"spec": {"$setElementOrder/containers": order("2", "1", "4", "3")}},
                 containers(c("2", "2"), c("1", wd="a"), c("9"), c("4", "4"), c("3", "3")),
                 id="k8s-set-elements-order-in-a-list-with-server-only-items-2"),
    pytest.param(POD, containers(c("1", wd="a"), c("2", "2"), c("7"), c("9"), c("8"), c("3", "3"), c("4", "4")),
                 {"spec": {"$setElementOrder/containers": order("2", "1", "4", "3")}},
                 containers(c("2", "2"), c("1", wd="a"), c("7"), c("9"), c("8"), c("4", "4"), c("3", "3")),
                 id="k8s-set-elements-order-in-a-list-with-server-only-items-3"),
    pytest.param(POD, containers(c("1"), c("2", "2"), c("3", "3")),
                 containers(c("4", "4"), order=["1", "2", "4", "3"]),
                 containers(c("1"), c("2", "2"), c("4", "4"), c("3", "3")),
                 id="add-an-item-in-the-middle-of-a-list-and-preserve-order"),
    pytest.param(POD, containers(c("1", wd="a"), c("2", "2", "b")),
                 containers(c("3", "3"), order=["3", "1", "2"]),
                 containers(c("3", "3"), c("1", wd="a"), c("2", "2", "b")),
                 id="k8s-add-an-item-in-a-list-and-preserve-order"),
    pytest.param(POD, containers(c("1", wd="a"), c("2", "2", "b")),
                 containers(c("4", "4"), c("3", "3"), order=["1", "4", "2", "3"]),
                 containers(c("1", wd="a"), c("4", "4"), c("2", "2", "b"), c("3", "3")),
                 id="k8s-add-multiple-items-in-a-list-and-preserve-order"),
    pytest.param(POD, containers(c("1", wd="a"), c("2", "2", "b"), c("3", "3")),
                 containers({"name": "3", "$patch": "delete"}, order=["2", "1"]),
                 containers(c("2", "2", "b"), c("1", wd="a")),
                 id="k8s-delete-an-item-in-a-list-and-preserve-order"),
    pytest.param(POD, containers(c("1", wd="a"), c("2", "2", "b"), c("3", "3")),
                 containers(c("3", "x"), order=["2", "3", "1"]),
                 containers(c("2", "2", "b"), c("3", "x"), c("1", wd="a")),
                 id="k8s-change-an-item-in-a-list-and-preserve-order"),
    pytest.param(POD, containers(c("1", wd="a"), c("2", "2", "b"), c("3", "3")),
                 containers(c("4", "4"), {"name": "3", "$patch": "delete"}, order=["4", "2", "1"]),
                 containers(c("4", "4"), c("2", "2", "b"), c("1", wd="a")),
                 id="k8s-add-and-delete-an-item-in-a-list-and-preserve-order"),
    pytest.param(POD, containers(c("1"), c("2", "dup1"), c("3"), c("2", "dup2"), c("4")),
                 {"spec": {"$setElementOrder/containers": order("2", "1", "4", "3", "2")}},
                 containers(c("2", "dup1"), c("2", "dup2"), c("1"), c("4"), c("3")),
                 id="k8s-set-element-order-for-a-merging-list-with-duplicate"),
    pytest.param(POD, fin("1", "2", "3", "2", "4"),
                 {"metadata": {"$setElementOrder/finalizers": ["2", "1", "4", "3", "2"]}},
                 fin("2", "2", "1", "4", "3"), id="k8s-set-element-order-for-a-merging-int-list-with-duplicate"),
    pytest.param(POD, containers(c("a", "nginx")), containers(c("b", "redis")),
                 containers(c("b", "redis"), c("a", "nginx")), id="k8s-docs-new-element-goes-first"),
    pytest.param(POD, {"spec": {"containers": [c("a", "a"), c("b", "b")],
                                "initContainers": [c("c", "c"), c("d", "d")]}},
                 {"spec": {"$setElementOrder/containers": order("b"), "$setElementOrder/initContainers": order("d", "c"),
                           "containers": [{"$patch": "delete", "name": "a"}]}},
                 {"spec": {"containers": [c("b", "b")], "initContainers": [c("d", "d"), c("c", "c")]}},
                 id="k8s-delete-and-reorder-in-one-list-reorder-in-another"),
    # --- lists of scalars with strategy merge (finalizers)
    pytest.param(POD, fin("1", "2"), fin("2", "3"), fin("1", "2", "3"), id="k8s-unique-scalars-when-merging-lists"),
    pytest.param(POD, fin("1", "2", "3"), fin("3", "1", "2"), fin("3", "1", "2"),
                 id="k8s-preserve-the-order-from-the-patch-in-a-merging-int-list"),
    pytest.param(POD, fin("1", "2", "3"), fin("3", "1"), fin("2", "3", "1"),
                 id="k8s-preserve-the-order-from-the-patch-in-a-merging-int-list-2"),
    pytest.param(POD, fin("1", "4", "2"),
                 {"metadata": {"$setElementOrder/finalizers": ["3", "1", "2"], "finalizers": ["3"]}},
                 fin("3", "1", "4", "2"), id="k8s-add-an-item-in-a-list-of-primitives-and-preserve-order"),
    pytest.param(POD, fin("1", "2", "3"),
                 {"metadata": {"$setElementOrder/finalizers": ["2", "1"], "$deleteFromPrimitiveList/finalizers": ["3"]}},
                 fin("2", "1"), id="k8s-delete-an-item-in-a-list-of-primitives-and-preserve-order"),
    pytest.param(POD, fin("1", "2", "3", "3", "4"),
                 {"metadata": {"$setElementOrder/finalizers": ["1", "2"], "$deleteFromPrimitiveList/finalizers": ["3"]}},
                 fin("1", "2", "4"), id="k8s-delete-all-duplicate-items-in-lists-of-scalars"),
    pytest.param(POD, fin("1", "3"), {"metadata": {"$setElementOrder/finalizers": ["3", "2", "1"]}},
                 fin("3", "1"), id="k8s-setElementOrder-contains-item-not-in-the-int-list"),
    pytest.param(POD, fin("1", "2"), {"metadata": {"$deleteFromPrimitiveList/finalizers": ["3"]}}, fin("1", "2"),
                 id="k8s-deleteFromPrimitiveList-of-nonexistent-item"),
    pytest.param(POD, {"metadata": {"labels": {"a": "b"}}}, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["3"]}},
                 {"metadata": {"labels": {"a": "b"}}}, id="k8s-deleteFromPrimitiveList-on-nonexistent-list"),
    pytest.param(POD, containers(c("1", args=["1", "2", "3"])),
                 {"spec": {"containers": [{"name": "1", "$deleteFromPrimitiveList/args": ["2"]}]}},
                 containers(c("1", args=["1", "3"])), id="k8s-deleteFromPrimitiveList-on-list-without-merge-strategy"),
    # --- retainKeys
    pytest.param(DEPLOYMENT, {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}},
                 {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
                 {"spec": {"strategy": {"type": "Recreate"}}}, id="k8s-retainKeys-map-should-clear-defaulted-field"),
    pytest.param(DEPLOYMENT, {"spec": {"strategy": {"type": "RollingUpdate"}}},
                 {"spec": {"strategy": {"rollingUpdate": {"maxSurge": 2}}}},
                 {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2}}}},
                 id="k8s-retainKeys-map-can-add-a-field-when-no-retainKeys-directive-present"),
    pytest.param(POD, {"spec": {"volumes": [{"name": "bar"}, {"name": "foo", "emptyDir": {}, "hostPath": {"path": "/x"}}]}},
                 {"spec": {"$setElementOrder/volumes": order("bar", "foo"),
                           "volumes": [{"$retainKeys": ["emptyDir", "name"], "name": "foo"}]}},
                 {"spec": {"volumes": [{"name": "bar"}, {"name": "foo", "emptyDir": {}}]}},
                 id="k8s-retainKeys-list-of-maps-clears-a-field"),
]


@pytest.mark.parametrize(("definition", "original", "patch", "expected"), CASES)
def test_strategic_merge_patch(definition: str, original: dict[str, Any], patch: dict[str, Any],
                               expected: dict[str, Any]) -> None:
    assert apply_strategic_merge_patch(original, patch, definition) == expected


ERRORS = [
    pytest.param([{"op": "add"}], 400, "must be a JSON object", id="patch-is-an-array"),
    pytest.param("x", 400, "must be a JSON object", id="patch-is-a-string"),
    pytest.param({"spec": {"$patch": "merge"}}, 400, "unknown patch type 'merge' in map at .spec",
                 id="unknown-directive-in-map"),
    pytest.param({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}, 400,
                 "merging lists cannot yet be specified", id="merge-directive-in-list"),
    pytest.param({"spec": {"containers": [{"name": "a", "$patch": "frobnicate"}]}}, 400,
                 "unknown patch type 'frobnicate'", id="unknown-directive-in-list"),
    pytest.param({"spec": {"containers": [{"image": "b"}]}}, 400,
                 "does not contain declared merge key: name", id="k8s-missing-merge-key-should-error-out"),
    pytest.param({"spec": {"containers": [{"$patch": "delete"}]}}, 400,
                 "does not contain declared merge key: name", id="delete-directive-without-merge-key"),
    pytest.param({"spec": {"$setElementOrder/containers": order("a", "b"), "containers": [c("b"), c("a")]}}, 400,
                 "doesn't match $setElementOrder list", id="k8s-check-order-in-setElementOrder-and-patch-list"),
    pytest.param({"metadata": {"$setElementOrder/finalizers": ["1", "2"], "finalizers": ["2", "1"]}}, 400,
                 "doesn't match $setElementOrder list", id="k8s-check-order-in-setElementOrder-int-list"),
    pytest.param({"spec": {"$setElementOrder/containers": {"name": "a"}}}, 400,
                 "invalid patch format of setElementOrder list", id="setElementOrder-not-a-list"),
    pytest.param({"spec": {"$setElementOrdercontainers": []}}, 400, "invalid patch format of setElementOrder list",
                 id="setElementOrder-without-slash"),
    pytest.param({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}, 400,
                 "invalid patch format of primitive list", id="deleteFromPrimitiveList-without-slash"),
    pytest.param({"spec": {"containers": [{"name": "a", "$retainKeys": "name"}]}}, 400,
                 "invalid patch format of retainKeys", id="retainKeys-not-a-list"),
    pytest.param({"spec": {"containers": [{"name": "a", "image": "b", "$retainKeys": ["name"]}]}}, 400,
                 '"image" is in the patch but not in $retainKeys', id="patch-field-not-in-retainKeys"),
    pytest.param({"metadata": {"finalizers": [["a"]]}}, 422, "lists of lists are not supported",
                 id="list-of-lists"),
    pytest.param({"metadata": {"finalizers": [1]}}, 400, "list element types are not identical",
                 id="mixed-element-types"),
]


@pytest.mark.parametrize(("patch", "code", "message"), ERRORS)
def test_malformed_patches_are_refused(patch: object, code: int, message: str) -> None:
    pod = {"metadata": {"name": "p", "finalizers": ["f"]}, "spec": {"containers": [c("a", "x")]}}
    with pytest.raises(PatchError) as info:
        apply_strategic_merge_patch(pod, patch, POD)
    assert (info.value.code, info.value.reason) == (code, {400: "BadRequest", 422: "Invalid"}[code])
    assert message in info.value.message


def test_error_messages_name_the_field() -> None:
    live = {"spec": {"template": {"spec": {"containers": [c("web")]}}}}
    with pytest.raises(PatchError) as info:
        apply_strategic_merge_patch(live, {"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}, RC)
    assert info.value.message.startswith(".spec.template.spec.containers:")


def _rc(env: list[dict[str, str]], resources: dict[str, Any] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "web", "image": "nginx", "env": env}
    if resources is not None:
        container["resources"] = resources
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [container]}}}}


def test_second_client_side_apply_keeps_fields_others_set() -> None:
    """kubectl apply's three-way patch for an added env var keeps the resources another writer set."""
    live = _rc([{"name": "A", "value": "1"}], resources={"limits": {"cpu": "500m"}})
    # What kubectl sends when the configuration gains env B (only what changed, plus the order).
    patch = {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "web"}],
        "containers": [{"name": "web", "$setElementOrder/env": [{"name": "A"}, {"name": "B"}],
                        "env": [{"name": "B", "value": "2"}]}],
    }}}}
    once = apply_strategic_merge_patch(live, patch, RC)
    assert once == _rc([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                       resources={"limits": {"cpu": "500m"}})
    assert apply_strategic_merge_patch(once, patch, RC) == once


def test_inputs_are_not_mutated_and_result_shares_nothing() -> None:
    live = {"spec": {"containers": [c("a", "x")]}, "metadata": {"labels": {"a": "b"}}}
    patch = {"spec": {"containers": [c("b", "y", args=["1"])]}, "metadata": {"labels": {"a": None}}}
    live_before, patch_before = copy.deepcopy(live), copy.deepcopy(patch)
    result = apply_strategic_merge_patch(live, patch, POD)
    assert (live, patch) == (live_before, patch_before)
    # A new element goes first, as in Kubernetes (its kubectl patch tutorial shows the same).
    assert [x["name"] for x in result["spec"]["containers"]] == ["b", "a"]
    result["spec"]["containers"][0]["args"].append("2")
    result["spec"]["containers"][1]["image"] = "z"
    assert (live, patch) == (live_before, patch_before)


names = st.sampled_from(["a", "b", "c", "d"])
images = st.sampled_from(["nginx", "redis", None])
container_lists = st.lists(st.builds(c, names, images), unique_by=lambda x: x["name"], max_size=4)
patch_containers = st.lists(
    st.one_of(st.builds(c, names, images), st.builds(lambda n: {"name": n, "$patch": "delete"}, names)),
    unique_by=lambda x: x["name"], max_size=4)
finalizer_lists = st.lists(names, unique=True, max_size=4)


@settings(max_examples=200, deadline=None)
@given(live=container_lists, live_fin=finalizer_lists, change=patch_containers, add=finalizer_lists,
       remove=finalizer_lists)
def test_applying_a_patch_twice_gives_the_same_object(live: list[Any], live_fin: list[str], change: list[Any],
                                                      add: list[str], remove: list[str]) -> None:
    doc = {"metadata": {"finalizers": live_fin}, "spec": {"containers": live}}
    patch = {"metadata": {"finalizers": add, "$deleteFromPrimitiveList/finalizers": remove},
             "spec": {"containers": change}}
    once = apply_strategic_merge_patch(doc, patch, POD)
    assert apply_strategic_merge_patch(once, patch, POD) == once
    names_after = [x["name"] for x in once["spec"]["containers"]]
    assert len(names_after) == len(set(names_after))
    deleted = {x["name"] for x in change if x.get("$patch") == "delete"}
    assert not deleted & set(names_after)
    assert not set(remove) & set(once["metadata"]["finalizers"]) - set(add)


directive_keys = st.sampled_from(["spec", "metadata", "containers", "name", "image", "finalizers", "labels", "$patch",
                                  "$retainKeys", "$setElementOrder/containers", "$deleteFromPrimitiveList/finalizers",
                                  "tolerations", "env"])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["a", "replace", "delete", "merge"]))
json_documents = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(directive_keys, inner, max_size=3)), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(patch=json_documents)
def test_any_patch_gives_an_object_or_a_patch_error(patch: object) -> None:
    pod = {"metadata": {"name": "p", "labels": {"a": "b"}, "finalizers": ["x"]},
           "spec": {"containers": [c("a", "i", env=[{"name": "E"}])], "tolerations": [{"key": "k"}]}}
    try:
        result = apply_strategic_merge_patch(pod, patch, POD)
    except PatchError as e:
        assert e.code in (400, 422) and e.message
    else:
        assert isinstance(result, dict)
