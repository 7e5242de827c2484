"""The registration of every built-in resource: one per discovery entry, every listed verb implemented."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from typing import Any

import pytest

from apiserver import openapi
from apiserver.apiextensions import customresource
from apiserver.registry.generic import NotServedREST
from apiserver.registry.groups import builtin_resources
from apiserver.registry.registry import Registry
from apiserver.registry.resource import Resource
from machinery.api import kinds, schema
from tests.crds import widget_crd, widget_version

RESOURCES = builtin_resources()
REGISTRY = Registry(RESOURCES)


def ids(resource: Resource) -> str:
    return f"{resource.info.group_resource}/{resource.info.version}"


def test_every_builtin_resource_is_registered_once() -> None:
    registered = Counter((r.info.group, r.info.version, r.info.plural) for r in RESOURCES)
    assert max(registered.values()) == 1
    assert set(registered) == {(r.group, r.version, r.plural) for r in kinds.RESOURCES}
    for r in RESOURCES:
        assert r.info is kinds.lookup(r.info.group, r.info.version, r.info.plural)


@pytest.mark.parametrize("resource", RESOURCES, ids=ids)
def test_every_subresource_discovery_lists_is_served_with_its_verbs(resource: Resource) -> None:
    assert set(resource.subresources) == {s.name for s in resource.info.subresources}
    for sub in resource.info.subresources:
        handler = resource.subresources[sub.name]
        for verb in sub.verbs:
            assert handler.implements(verb), f"{resource.info.plural}/{sub.name} does not implement {verb}"


@pytest.mark.parametrize("resource", [r for r in RESOURCES if r.rest is not None], ids=ids)
def test_virtual_resources_implement_their_verbs(resource: Resource) -> None:
    assert resource.strategy is None
    for verb in resource.info.verbs:
        assert callable(getattr(resource.rest, verb, None)), verb


@pytest.mark.parametrize("resource", [r for r in RESOURCES if r.stored], ids=ids)
def test_stored_resources_know_their_scope_and_status(resource: Resource) -> None:
    strategy = resource.strategy
    assert strategy is not None
    storage = REGISTRY.get(resource.storage_info)
    assert storage.stored and storage.storage_of is None
    assert strategy.namespaced == storage.info.namespaced
    assert strategy.has_status == storage.info.has_status
    # DELETE answers with the object exactly where Kubernetes' OpenAPI says so (and for Namespaces,
    # which Kubernetes answers with while they terminate, though its OpenAPI says Status).
    assert strategy.return_deleted_object == (resource.info.delete_returns_object
                                              or resource.info is kinds.NAMESPACES)
    if resource.storage_of is not None:
        assert resource.converter is not None
        assert resource.info.etcd_resource == resource.storage_of.etcd_resource


def test_no_two_stored_resources_share_keys() -> None:
    prefixes = Counter(info.etcd_resource for info in REGISTRY.stored())
    assert max(prefixes.values()) == 1
    # Kubernetes' own key layout, where it differs from the resource name.
    by_plural = {info.plural: info.etcd_resource for info in REGISTRY.stored()}
    assert by_plural["nodes"] == "minions" and by_plural["services"] == "services/specs"
    assert by_plural["endpoints"] == "services/endpoints" and by_plural["replicationcontrollers"] == "controllers"


def test_what_kubesim_does_not_serve_yet_is_named() -> None:
    """The subresources discovery lists but kubesim answers with 501: the work still to do."""
    not_served = sorted(f"{r.info.plural}/{name}" for r in RESOURCES for name, sub in r.subresources.items()
                        if isinstance(sub, NotServedREST))
    assert not_served == []


def test_group_versions_are_ordered_as_kubernetes_orders_them() -> None:
    gvs = REGISTRY.group_versions()
    assert gvs[0] == ("", "v1")
    assert REGISTRY.preferred_version("autoscaling") == "v2"
    assert [gv for gv in gvs if gv[0] == "autoscaling"] == [("autoscaling", "v2"), ("autoscaling", "v1")]


def test_a_document_built_across_a_registry_change_is_not_kept() -> None:
    registry = Registry(RESOURCES)
    crd = widget_crd("memo.example.com")
    crd["status"] = {"acceptedNames": crd["spec"]["names"]}
    resource = customresource.resources_for(crd)[0]
    builds = []

    def build() -> int:
        builds.append(registry.generation)
        if len(builds) == 1:
            registry.add(resource)  # the event loop serves a CRD while the thread pool builds
        return len(builds)

    assert registry.memo("doc", build) == 1
    assert registry.memo("doc", build) == 2 and registry.memo("doc", build) == 2
    assert builds == [0, 1]


def test_documents_built_in_a_thread_while_crds_come_and_go_never_fail() -> None:
    """The thread pool builds OpenAPI and reads the registry while the event loop adds and removes CRDs."""
    registry = Registry(RESOURCES)
    crds = []
    for i in range(20):
        crd = widget_crd(f"race{i}.example.com")
        crd["status"] = {"acceptedNames": crd["spec"]["names"]}
        crds.append((crd, customresource.resources_for(crd)))
    failures: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                registry.group_versions()
                registry.resources()
                registry.stored()
                registry.for_kind("race7.example.com/v1", "Widget")
                if registry.generation % 50 == 0:
                    openapi.documents(registry)
            except BaseException as e:  # noqa: BLE001 - any failure is the finding
                failures.append(e)
                return

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as CPython allows
    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(300):
            # As the CRD controller serves and stops serving them: definitions before versions, after them.
            for crd, resources in crds:
                schema.set_custom_definitions(crd["metadata"]["name"], customresource.definitions(crd))
                for resource in resources:
                    registry.add(resource)
            for crd, resources in crds:
                for resource in resources:
                    registry.remove(resource.info)
                schema.set_custom_definitions(crd["metadata"]["name"], {})
    finally:
        stop.set()
        reader.join()
        sys.setswitchinterval(interval)
        for crd, _ in crds:
            schema.set_custom_definitions(crd["metadata"]["name"], {})
    assert failures == []


def _established(crd: dict[str, Any]) -> dict[str, Any]:
    crd["status"] = {"acceptedNames": crd["spec"]["names"]}
    return crd


def test_an_unserved_storage_version_is_stored_but_not_served() -> None:
    """A CRD's storage version with served: false keeps its store, and no client reaches it."""
    registry = Registry(RESOURCES)
    g = "unserved.example.com"
    crd = _established(widget_crd(g, versions=[widget_version("v1", storage=False),
                                               widget_version("v2", served=False)]))
    v2, v1 = customresource.resources_for(crd)
    assert (v2.info.version, v2.served, v2.stored) == ("v2", False, True)
    assert (v1.info.version, v1.served, v1.storage_of) == ("v1", True, v2.info)
    groups_before = registry.group_versions()
    for resource in (v2, v1):
        registry.add(resource)
    # What clients reach: routing, the resource list, discovery's group-versions, OpenAPI.
    assert registry.lookup(g, "v2", "widgets") is None
    assert registry.lookup(g, "v1", "widgets") is v1
    assert not registry.serves(g, "v2") and registry.serves(g, "v1")
    assert [r.info for r in registry.resources() if r.info.group == g] == [v1.info]
    assert [gv for gv in registry.group_versions() if gv[0] == g] == [(g, "v1")]
    assert registry.preferred_version(g) == "v1"
    assert not registry.has_subresource(g, "v2", "widgets", "status")
    assert registry.for_kind(f"{g}/v2", "Widget") is None
    # What keeps the objects: the registration and the stored keys.
    assert registry.get(v2.info) is v2 and registry.get(v1.info).storage_of == v2.info
    assert [i for i in registry.stored() if i.group == g] == [v2.info]

    # Served from now on (served: true): v2 is reached, and preferred as Kubernetes orders versions.
    generation = registry.generation
    served_v2 = customresource.resources_for(_established(widget_crd(g, versions=[
        widget_version("v1", storage=False), widget_version("v2")])))[0]
    registry.add(served_v2, version_priority=30)
    assert registry.generation > generation
    assert registry.lookup(g, "v2", "widgets") is served_v2 and registry.get(v2.info) is served_v2
    assert [gv for gv in registry.group_versions() if gv[0] == g] == [(g, "v2"), (g, "v1")]
    assert [i for i in registry.stored() if i.group == g] == [v2.info]

    # Unserved again; then forgotten with the CRD, the group with it.
    registry.add(v2)
    assert registry.lookup(g, "v2", "widgets") is None and not registry.serves(g, "v2")
    for info in (v1.info, v2.info):
        registry.remove(info)
    assert not [i for i in registry.stored() if i.group == g]
    with pytest.raises(LookupError):
        registry.get(v2.info)
    assert registry.group_versions() == groups_before


def test_only_a_resource_that_holds_its_objects_may_be_unserved() -> None:
    crd = _established(widget_crd("other.example.com", versions=[widget_version("v1", storage=False),
                                                                  widget_version("v2")]))
    v2, v1 = customresource.resources_for(crd)
    with pytest.raises(ValueError, match="only a resource that holds its objects"):
        Resource(info=v1.info, storage_of=v2.info, converter=v1.converter, served=False)
    review = kinds.lookup("authentication.k8s.io", "v1", "tokenreviews")
    assert review is not None
    with pytest.raises(ValueError, match="only a resource that holds its objects"):
        Resource(info=review, rest=object(), served=False)
