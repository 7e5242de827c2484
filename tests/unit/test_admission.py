"""Admission plugins, against a context whose watch caches hold what a test puts there."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver import errors
from apiserver.admission import Attributes, UserInfo
from apiserver.admission.default_toleration_seconds import DefaultTolerationSeconds
from apiserver.admission.namespace_lifecycle import NamespaceLifecycle
from apiserver.admission.priority import Priority
from apiserver.storage.objects import Entry
from machinery.api import kinds

NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300}
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
               "tolerationSeconds": 300}


class _Cache:
    def __init__(self, objects: list[dict[str, Any]], info: kinds.ResourceInfo[Any]) -> None:
        self.entries = {info.etcd_key(o["metadata"].get("namespace"), o["metadata"]["name"]):
                        Entry("", b"{}", 1, o) for o in objects}

    def get(self, key: str) -> Entry | None:
        return self.entries.get(key)

    def sorted_entries(self, namespace: str | None = None) -> list[Entry]:
        return [self.entries[k] for k in sorted(self.entries)
                if namespace is None or (self.entries[k].obj.get("metadata") or {}).get("namespace") == namespace]


class _Store:
    def __init__(self, cache: _Cache, etcd: _Cache, info: kinds.ResourceInfo[Any], reads: list[str]) -> None:
        self.cache = cache
        self.etcd = etcd
        self.info = info
        self.reads = reads

    async def read(self, namespace: str | None, name: str) -> Entry | None:
        self.reads.append(name)
        return self.etcd.get(self.info.etcd_key(namespace, name))

    async def lookup(self, namespace: str | None, name: str) -> Entry | None:
        entry = self.cache.get(self.info.etcd_key(namespace, name))
        return entry if entry is not None else await self.read(namespace, name)


class Context:
    """What plugins read of the APIServer: the stores, here backed by plain lists.

    ``etcd`` holds what a live read finds where it differs from the cache (an
    object the cache has not seen yet, or a newer version of it); ``etcd_reads``
    records the names read live.
    """

    def __init__(self, *, etcd: dict[str, list[dict[str, Any]]] | None = None,
                 **objects: list[dict[str, Any]]) -> None:
        self.objects = objects
        self.etcd = etcd or {}
        self.etcd_reads: list[str] = []

    def store(self, info: kinds.ResourceInfo[Any]) -> _Store:
        cached = self.objects.get(info.plural, [])
        live = {o["metadata"]["name"]: o for o in cached}
        live.update({o["metadata"]["name"]: o for o in self.etcd.get(info.plural, [])})
        return _Store(_Cache(cached, info), _Cache(list(live.values()), info), info, self.etcd_reads)


def attrs(operation: str, info: kinds.ResourceInfo[Any], obj: dict[str, Any] | None, *, ctx: Context,
          namespace: str | None = "default", name: str = "x", old: dict[str, Any] | None = None) -> Attributes:
    return Attributes(operation, info, "", namespace, name, obj, old, False,  # type: ignore[arg-type]
                      UserInfo("admin"), ctx)  # type: ignore[arg-type]


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": [], **spec}}


def priority_class(name: str, value: int, *, default: bool = False, policy: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": name}, "value": value, "globalDefault": default}
    if policy:
        obj["preemptionPolicy"] = policy
    return obj


SYSTEM = [priority_class("system-node-critical", 2000001000), priority_class("system-cluster-critical", 2000000000)]


@pytest.mark.parametrize(("tolerations", "expected"), [
    pytest.param([], [NOT_READY, UNREACHABLE], id="both-added"),
    pytest.param([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                   "tolerationSeconds": 30}],
                 [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                   "tolerationSeconds": 30}, UNREACHABLE], id="own-not-ready-kept"),
    pytest.param([{"operator": "Exists"}], [{"operator": "Exists"}], id="tolerate-everything"),
    pytest.param([{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}],
                 [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}, NOT_READY],
                 id="any-effect-counts"),
    pytest.param([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}],
                 [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"},
                  NOT_READY, UNREACHABLE], id="no-schedule-does-not-count"),
])
async def test_default_toleration_seconds(tolerations: list[dict[str, Any]],
                                          expected: list[dict[str, Any]]) -> None:
    obj = pod(tolerations=copy.deepcopy(tolerations))
    await DefaultTolerationSeconds().admit(attrs("CREATE", kinds.PODS, obj, ctx=Context()))
    assert obj["spec"]["tolerations"] == expected


async def test_default_toleration_seconds_follow_the_flags() -> None:
    obj = pod()
    await DefaultTolerationSeconds(not_ready_seconds=7, unreachable_seconds=9).admit(
        attrs("CREATE", kinds.PODS, obj, ctx=Context()))
    assert [t["tolerationSeconds"] for t in obj["spec"]["tolerations"]] == [7, 9]


@pytest.mark.parametrize(("spec", "classes", "expected"), [
    pytest.param({}, SYSTEM, (0, "PreemptLowerPriority", None), id="no-class-no-default"),
    pytest.param({"priorityClassName": "system-node-critical"}, SYSTEM,
                 (2000001000, "PreemptLowerPriority", "system-node-critical"), id="node-critical"),
    pytest.param({}, [*SYSTEM, priority_class("low", 10, default=True, policy="Never")],
                 (10, "Never", "low"), id="global-default-named"),
    pytest.param({"priorityClassName": "high"}, [priority_class("high", 1000, policy="Never")],
                 (1000, "Never", "high"), id="class-policy"),
    pytest.param({"priorityClassName": "high", "priority": 1000}, [priority_class("high", 1000)],
                 (1000, "PreemptLowerPriority", "high"), id="same-priority-given"),
])
async def test_priority_resolves_the_class(spec: dict[str, Any], classes: list[dict[str, Any]],
                                           expected: tuple[int, str, str | None]) -> None:
    obj = pod(**spec)
    await Priority().admit(attrs("CREATE", kinds.PODS, obj, ctx=Context(priorityclasses=classes)))
    s = obj["spec"]
    assert (s["priority"], s["preemptionPolicy"], s.get("priorityClassName")) == expected


@pytest.mark.parametrize(("spec", "message"), [
    pytest.param({"priorityClassName": "batch"}, 'pods "x" is forbidden: no PriorityClass with name batch was found',
                 id="unknown-class"),
    pytest.param({"priorityClassName": "system-node-critical", "priority": 5},
                 "the integer value of priority (5) must not be provided in pod spec; priority admission "
                 "controller computed 2000001000 from the given PriorityClass name", id="wrong-priority"),
    pytest.param({"priorityClassName": "system-node-critical", "preemptionPolicy": "Never"},
                 "the string value of PreemptionPolicy (Never) must not be provided in pod spec",
                 id="wrong-policy"),
])
async def test_priority_refuses(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(errors.APIError) as e:
        await Priority().admit(attrs("CREATE", kinds.PODS, pod(**spec), ctx=Context(priorityclasses=SYSTEM)))
    assert (e.value.code, e.value.reason) == (403, "Forbidden")
    assert message in e.value.message


async def test_priority_reads_a_class_the_cache_has_not_seen_from_etcd() -> None:
    ctx = Context(priorityclasses=SYSTEM, etcd={"priorityclasses": [priority_class("fresh", 7)]})
    obj = pod(priorityClassName="fresh")
    await Priority().admit(attrs("CREATE", kinds.PODS, obj, ctx=ctx))
    assert (obj["spec"]["priority"], ctx.etcd_reads) == (7, ["fresh"])
    with pytest.raises(errors.APIError) as e:
        await Priority().admit(attrs("CREATE", kinds.PODS, pod(priorityClassName="gone"), ctx=ctx))
    assert e.value.code == 403 and ctx.etcd_reads == ["fresh", "gone"]


async def test_priority_keeps_the_priority_on_update() -> None:
    old = pod(priority=7, preemptionPolicy="Never")
    new = pod()
    await Priority().admit(attrs("UPDATE", kinds.PODS, new, old=old, ctx=Context()))
    assert (new["spec"]["priority"], new["spec"]["preemptionPolicy"]) == (7, "Never")


async def test_only_one_priority_class_may_be_the_default() -> None:
    ctx = Context(priorityclasses=[priority_class("a", 1, default=True)])
    await Priority().validate(attrs("CREATE", kinds.PRIORITY_CLASSES, priority_class("b", 2), ctx=ctx,
                                    namespace=None, name="b"))
    with pytest.raises(errors.APIError) as e:
        await Priority().validate(attrs("CREATE", kinds.PRIORITY_CLASSES, priority_class("b", 2, default=True),
                                        ctx=ctx, namespace=None, name="b"))
    assert "PriorityClass a is already marked as default. Only one default can exist" in e.value.message


def namespace(name: str, phase: str = "Active") -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"phase": phase}}


async def test_namespace_lifecycle_refuses_creates_in_missing_and_terminating_namespaces() -> None:
    ctx = Context(namespaces=[namespace("default"), namespace("going", "Terminating")])
    plugin = NamespaceLifecycle()
    await plugin.admit(attrs("CREATE", kinds.CONFIG_MAPS, {"metadata": {"name": "x"}}, ctx=ctx))
    with pytest.raises(errors.APIError) as e:
        await plugin.admit(attrs("CREATE", kinds.CONFIG_MAPS, {"metadata": {"name": "x"}}, ctx=ctx,
                                 namespace="nowhere"))
    assert (e.value.code, e.value.message) == (404, 'namespaces "nowhere" not found')
    with pytest.raises(errors.APIError) as e:
        await plugin.admit(attrs("CREATE", kinds.CONFIG_MAPS, {"metadata": {"name": "x"}}, ctx=ctx,
                                 namespace="going"))
    assert e.value.code == 403 and "because it is being terminated" in e.value.message
    # Reviews are answered in any namespace.
    review = kinds.builtin("authorization.k8s.io", "v1", "localsubjectaccessreviews")
    await plugin.admit(attrs("CREATE", review, {"metadata": {}}, ctx=ctx, namespace="nowhere"))


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
async def test_namespace_lifecycle_keeps_the_system_namespaces(name: str) -> None:
    with pytest.raises(errors.APIError) as e:
        await NamespaceLifecycle().admit(attrs("DELETE", kinds.NAMESPACES, None, ctx=Context(), namespace=None,
                                               name=name, old=namespace(name)))
    assert (e.value.code, e.value.message) == (403, (f'namespaces "{name}" is forbidden: this namespace may not '
                                                    "be deleted"))
    await NamespaceLifecycle().admit(attrs("DELETE", kinds.NAMESPACES, None, ctx=Context(), namespace=None,
                                           name="team-a", old=namespace("team-a")))


async def test_namespace_lifecycle_reads_a_namespace_it_saw_deleted_from_etcd() -> None:
    """The cache still shows the namespace Active; etcd already has it Terminating."""
    now = [100.0]
    ctx = Context(namespaces=[namespace("going"), namespace("other")],
                  etcd={"namespaces": [namespace("going", "Terminating")]})
    plugin = NamespaceLifecycle(clock=lambda: now[0])
    cm = {"metadata": {"name": "x"}}
    await plugin.admit(attrs("CREATE", kinds.CONFIG_MAPS, cm, ctx=ctx, namespace="going"))
    assert ctx.etcd_reads == []  # before the deletion, the cache answers
    await plugin.admit(attrs("DELETE", kinds.NAMESPACES, None, ctx=ctx, namespace=None, name="going",
                             old=namespace("going")))
    with pytest.raises(errors.APIError) as e:
        await plugin.admit(attrs("CREATE", kinds.CONFIG_MAPS, cm, ctx=ctx, namespace="going"))
    assert e.value.code == 403 and ctx.etcd_reads == ["going"]
    await plugin.admit(attrs("CREATE", kinds.CONFIG_MAPS, cm, ctx=ctx, namespace="other"))
    assert ctx.etcd_reads == ["going"]  # only the deleted namespace is read live
    now[0] += 29
    with pytest.raises(errors.APIError):
        await plugin.admit(attrs("CREATE", kinds.CONFIG_MAPS, cm, ctx=ctx, namespace="going"))
    now[0] += 2  # past the 30 s: the cache is trusted again
    await plugin.admit(attrs("CREATE", kinds.CONFIG_MAPS, cm, ctx=ctx, namespace="going"))
    assert ctx.etcd_reads == ["going", "going"]
