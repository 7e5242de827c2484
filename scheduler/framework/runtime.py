"""The framework runtime: one profile's plugins, wired into extension points and run in order.

``Framework`` is ``frameworkImpl``: built from a profile (which plugins,
which weights, which args), it instantiates every plugin the profile names,
expands ``multiPoint`` into every extension point each plugin implements
(with Kubernetes' ordering rules: a plugin configured explicitly at an
extension point keeps that position; ``disabled`` removes it there) and runs
the extension points with Kubernetes' semantics:

- PreFilter: SKIP means "do not run my Filter"; UNSCHEDULABLE_AND_UNRESOLVABLE
  ends the cycle at once; node-name results are intersected;
- Filter: a node's verdict is its first rejecting plugin's (plugins run in
  profile order); :meth:`Framework.filter_nodes` runs it over a chunk of
  nodes plugin by plugin, using a plugin's batch fast path when it has one,
  which gives the same first-rejecting plugin per node;
- Score: each plugin scores every feasible node, normalizes to 0..100, and
  the scores are multiplied by the plugin's weight and summed;
- Reserve/Unreserve; Permit (WAIT holds the Pod, see
  :mod:`scheduler.framework.waiting_pods`, until its plugins allow it);
  PreBind, Bind (async; SKIP passes to the next binder) and PostBind.

It is also the :class:`~scheduler.framework.interface.Handle` plugins get:
the cache as their snapshot, namespace and ReplicationController lookups,
nominated Pods and the preemption hooks, all given by the scheduler as a
:class:`ClusterView`.

A plugin that raises is a bug; at every extension point the exception becomes
an ERROR status naming the plugin, so one bad Pod (or one out-of-tree plugin)
cannot stop the scheduler; a factory that raises makes the profile invalid. Used from the event
loop's thread only; nothing here awaits except :meth:`Framework.run_bind`.
"""

from __future__ import annotations

import logging
import operator
import random
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from machinery.api import Selector
from machinery.api.kinds import ResourceInfo
from machinery.client import Client
from machinery.client.clock import Clock, RealClock
from machinery.informer import InformerFactory
from machinery.informer.store import Store
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    SUCCESS,
    BatchFilterPlugin,
    BindPlugin,
    ClusterEvent,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    NodeInfoLister,
    NodeToStatus,
    NormalizeScorePlugin,
    PermitPlugin,
    Plugin,
    PluginFactory,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueuedPodInfoLike,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
)
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.framework.waiting_pods import WaitingPod, WaitingPods

log = logging.getLogger(__name__)

#: The extension points a profile may configure, with the protocol a plugin needs for each.
EXTENSION_POINTS: Final[dict[str, Any]] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}
#: Extension points of KubeSchedulerConfiguration that kubesim has no plugins for; only empty sets are allowed.
UNSUPPORTED_EXTENSION_POINTS: Final[tuple[str, ...]] = ()

_MAX_TOTAL_SCORE: Final = (1 << 63) - 1


class FrameworkError(ValueError):
    """A profile that cannot be built (unknown plugin, plugin at the wrong extension point...)."""


@dataclass(frozen=True, slots=True)
class PluginRef:
    """A plugin named in a profile, with its Score weight (0: not given)."""

    name: str
    weight: int = 0


@dataclass(frozen=True, slots=True)
class PluginSet:
    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ProfileSpec:
    """One ``profiles[]`` entry of KubeSchedulerConfiguration, defaults already merged in."""

    scheduler_name: str
    #: Extension point name ("multiPoint", "filter"...) -> its plugin set.
    plugins: Mapping[str, PluginSet]
    plugin_config: Mapping[str, Mapping[str, Any]]
    percentage_of_nodes_to_score: int | None = None


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What the scheduler lends every framework: the client, the cache, listers, the nominator and preemption."""

    client: Client
    snapshot: NodeInfoLister
    namespace_labels: Callable[[str], Mapping[str, str] | None]
    namespaces_matching: Callable[[Selector], list[str]]
    #: The informer cache of a resource the scheduler watches besides Pods, Nodes and Namespaces
    #: (Services, RCs, ReplicaSets, StatefulSets, PVCs, PVs, StorageClasses, CSINodes); None if unwatched.
    lister: Callable[[ResourceInfo[Any]], Store[Any] | None]
    nominated_pods_for_node: Callable[[str], Sequence[PodInfo]]
    #: The nodes some Pod is nominated to (usually none).
    nominated_node_names: Callable[[], Collection[str]]
    #: (profile's scheduler name, preemptor, node, victims): evict in the background.
    preempt: Callable[[str, PodInfo, str, Sequence[PodInfo]], None]
    #: The process's informers (a throwaway factory when profiles are only being checked).
    informers: InformerFactory = field(default_factory=lambda: InformerFactory(cast(Client, None)))
    #: The scheduler's random source (``--seed``).
    rng: random.Random = field(default_factory=random.Random)
    #: Move queued Pods (by uid) to activeQ (``PodsToActivate``).
    activate: Callable[[Iterable[str]], None] = lambda uids: None
    clock: Clock = field(default_factory=RealClock)


@dataclass(slots=True)
class PluginScores:
    """One Score plugin's scores for the feasible nodes, in their order."""

    plugin: str
    weight: int
    raw: list[int]
    normalized: list[int]


@dataclass(slots=True)
class PreFilterOutcome:
    result: PreFilterResult | None
    status: Status
    #: Plugins that rejected the Pod, or whose node-name result excluded nodes.
    unschedulable_plugins: set[str]


class Framework:
    """One profile's plugins and the code that runs them (see the module docstring)."""

    def __init__(self, spec: ProfileSpec, registry: Mapping[str, PluginFactory], view: ClusterView) -> None:
        self.profile_name = spec.scheduler_name
        self.percentage_of_nodes_to_score = spec.percentage_of_nodes_to_score
        self._view = view
        self.plugins: dict[str, Plugin] = {}
        needed = {ref.name for ps in spec.plugins.values() for ref in ps.enabled}
        for name in sorted(needed):
            factory = registry.get(name)
            if factory is None:
                raise FrameworkError(f"plugin {name!r} does not exist")
            try:
                self.plugins[name] = factory(spec.plugin_config.get(name), self)
            except (ValueError, TypeError) as err:
                raise FrameworkError(f"initializing plugin {name!r}: {err}") from None
            except Exception as err:
                # An out-of-tree factory with a bug: the profile cannot be built, the scheduler keeps running.
                log.exception("the factory of plugin %s failed", name)
                raise FrameworkError(f"initializing plugin {name!r}: {type(err).__name__}: {err}") from None
        unknown_config = set(spec.plugin_config) - set(self.plugins)
        if unknown_config:
            # Kubernetes ignores config of plugins it does not run; a misspelt name is worth a warning.
            log.warning("profile %s: pluginConfig for plugins that are not enabled: %s", self.profile_name,
                        ", ".join(sorted(unknown_config)))
        points = {point: self._expand(point, spec) for point in EXTENSION_POINTS}
        self.pre_enqueue_plugins: list[PreEnqueuePlugin] = points["preEnqueue"]
        self.pre_filter_plugins: list[PreFilterPlugin] = points["preFilter"]
        self.filter_plugins: list[FilterPlugin] = points["filter"]
        self.post_filter_plugins: list[PostFilterPlugin] = points["postFilter"]
        self.pre_score_plugins: list[PreScorePlugin] = points["preScore"]
        self.score_plugins: list[ScorePlugin] = points["score"]
        self.reserve_plugins: list[ReservePlugin] = points["reserve"]
        self.permit_plugins: list[PermitPlugin] = points["permit"]
        self.pre_bind_plugins: list[PreBindPlugin] = points["preBind"]
        self.bind_plugins: list[BindPlugin] = points["bind"]
        self.post_bind_plugins: list[PostBindPlugin] = points["postBind"]
        self.waiting_pods = WaitingPods(view.clock)
        queue_sort: list[QueueSortPlugin] = points["queueSort"]
        if len(queue_sort) != 1:
            raise FrameworkError(f"only one queue sort plugin required for profile with scheduler name "
                                 f"{self.profile_name!r}, but got {len(queue_sort)}")
        self.queue_sort: QueueSortPlugin = queue_sort[0]
        if not self.bind_plugins:
            raise FrameworkError(f"at least one bind plugin is needed for profile with scheduler name "
                                 f"{self.profile_name!r}")
        self.score_weights = self._score_weights(spec)
        self._batch_filters: dict[str, Callable[[CycleState, PodInfo, list[NodeInfo]], list[NodeInfo]]] = {
            p.name: p.filter_nodes for p in self.filter_plugins if isinstance(p, BatchFilterPlugin)}
        self.pre_filter_extensions = []
        for p in self.pre_filter_plugins:
            try:
                ext = p.pre_filter_extensions()
            except Exception as err:  # noqa: BLE001 - a plugin's bug makes the profile invalid
                raise FrameworkError(f"plugin {p.name!r}: pre_filter_extensions failed: {type(err).__name__}: "
                                     f"{err}") from None
            if ext is not None:
                self.pre_filter_extensions.append((p.name, ext))
        # Protocol isinstance checks are slow: decide once which Score plugins normalize.
        self._normalizers = {p.name: p.normalize_score for p in self.score_plugins
                             if isinstance(p, NormalizeScorePlugin)}

    # --- building --------------------------------------------------------------------------------

    def _expand(self, point: str, spec: ProfileSpec) -> list[Any]:
        """The plugins of one extension point: explicit ones, then multiPoint ones (``expandMultiPointPlugins``)."""
        protocol = EXTENSION_POINTS[point]
        kind = point[0].upper() + point[1:] + "Plugin"
        own = spec.plugins.get(point, PluginSet())
        explicit: list[str] = []
        for ref in own.enabled:
            if not isinstance(self.plugins[ref.name], protocol):
                raise FrameworkError(f"plugin {ref.name!r} does not extend {kind} plugin")
            if ref.name in explicit:
                raise FrameworkError(f"plugin {ref.name!r} already registered as {kind!r}")
            explicit.append(ref.name)
        if "*" in own.disabled:
            return [self.plugins[name] for name in explicit]
        overridden: list[str] = []
        from_multi_point: list[str] = []
        for ref in spec.plugins.get("multiPoint", PluginSet()).enabled:
            plugin = self.plugins[ref.name]
            if not isinstance(plugin, protocol) or ref.name in own.disabled:
                continue
            if ref.name in explicit:
                overridden.append(ref.name)
                continue
            if ref.name in from_multi_point:
                raise FrameworkError(f"plugin {ref.name!r} already registered as {kind!r}")
            from_multi_point.append(ref.name)
        # Explicitly re-configured multiPoint plugins first (in their explicit order), then the other
        # multiPoint plugins, then plugins enabled only at this extension point.
        order = ([n for n in explicit if n in overridden] + from_multi_point
                 + [n for n in explicit if n not in overridden])
        return [self.plugins[name] for name in order]

    def _score_weights(self, spec: ProfileSpec) -> dict[str, int]:
        weights: dict[str, int] = {}
        refs = (*spec.plugins.get("score", PluginSet()).enabled, *spec.plugins.get("multiPoint", PluginSet()).enabled)
        total = 0
        for ref in refs:
            if not isinstance(self.plugins[ref.name], ScorePlugin) or ref.name in weights:
                continue
            # A weight of zero is not allowed; an unset weight means 1.
            weights[ref.name] = ref.weight or 1
            total += weights[ref.name] * MAX_NODE_SCORE
            if total > _MAX_TOTAL_SCORE:
                raise FrameworkError("total score of Score plugins could overflow")
        return {p.name: weights[p.name] for p in self.score_plugins}

    # --- Handle ----------------------------------------------------------------------------------

    @property
    def scheduler_name(self) -> str:
        return self.profile_name

    @property
    def snapshot(self) -> NodeInfoLister:
        return self._view.snapshot

    @property
    def client(self) -> Client:
        return self._view.client

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self._view.namespace_labels(namespace)

    def namespaces_matching(self, selector: Any) -> list[str]:
        return self._view.namespaces_matching(selector)

    def lister(self, resource: ResourceInfo[Any]) -> Store[Any] | None:
        return self._view.lister(resource)

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return self._view.nominated_pods_for_node(node_name)

    def preempt(self, pod: PodInfo, node_name: str, victims: Sequence[PodInfo]) -> None:
        self._view.preempt(self.profile_name, pod, node_name, victims)

    @property
    def informers(self) -> InformerFactory:
        return self._view.informers

    @property
    def rng(self) -> random.Random:
        return self._view.rng

    def activate(self, uids: Iterable[str]) -> None:
        self._view.activate(uids)

    def iterate_over_waiting_pods(self, callback: Callable[[WaitingPod], None]) -> None:
        for waiting in self.waiting_pods:
            callback(waiting)

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def reject_waiting_pod(self, uid: str) -> bool:
        waiting = self.waiting_pods.get(uid)
        if waiting is None:
            return False
        for plugin in waiting.pending_plugins():
            waiting.reject(plugin, "removed")
        return True

    # --- queueing --------------------------------------------------------------------------------

    def less(self, a: QueuedPodInfoLike, b: QueuedPodInfoLike) -> bool:
        try:
            return self.queue_sort.less(a, b)
        except Exception:
            # A broken QueueSort must not break the heap: fall back to arrival order.
            log.exception("QueueSort plugin %s failed", self.queue_sort.name)
            return a.timestamp < b.timestamp

    def run_pre_enqueue(self, pod: PodInfo) -> Status:
        for plugin in self.pre_enqueue_plugins:
            status = _guard(plugin.name, "PreEnqueue", lambda p=plugin: p.pre_enqueue(pod))  # type: ignore[misc]
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return SUCCESS

    def events_to_register(self) -> dict[str, list[ClusterEvent]]:
        """Per plugin that can reject a Pod, the cluster events that may make it schedulable again."""
        rejecting = {p.name for p in (*self.pre_enqueue_plugins, *self.pre_filter_plugins, *self.filter_plugins,
                                      *self.reserve_plugins, *self.permit_plugins)}
        events: dict[str, list[ClusterEvent]] = {}
        for name, plugin in self.plugins.items():
            if name in rejecting and isinstance(plugin, EnqueueExtensions):
                try:
                    events[name] = list(plugin.events_to_register())
                except Exception:
                    # Treated as "interested in everything", as a plugin that registers nothing.
                    log.exception("events_to_register of plugin %s failed", name)
        return events

    # --- PreFilter and Filter ----------------------------------------------------------------------

    def run_pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> PreFilterOutcome:
        result: PreFilterResult | None = None
        rejection: Status | None = None
        unschedulable: set[str] = set()
        with_nodes: list[str] = []
        for plugin in self.pre_filter_plugins:
            try:
                partial, status = plugin.pre_filter(state, pod, nodes)
            except Exception as err:
                log.exception("PreFilter plugin %s failed on %s", plugin.name, pod.key)
                partial, status = None, Status.from_error(f"{type(err).__name__}: {err}")
            if status.is_skip():
                state.skip_filter_plugins.add(plugin.name)
                continue
            if not status.is_success():
                status = status.with_plugin(plugin.name)
                if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return PreFilterOutcome(None, status, {plugin.name})
                if status.code is Code.UNSCHEDULABLE:
                    # Later PreFilters still run: preemption needs their state.
                    unschedulable.add(plugin.name)
                    rejection = rejection or status
                    continue
                return PreFilterOutcome(None, Status.from_error(
                    f"running PreFilter plugin {plugin.name!r}: {status.message}", plugin=plugin.name), set())
            if partial is not None and partial.node_names is not None:
                with_nodes.append(plugin.name)
                result = partial.merge(result)
                if not result.node_names:
                    message = (f"node(s) didn't satisfy plugin {with_nodes[0]}" if len(with_nodes) == 1 else
                               f"node(s) didn't satisfy plugin(s) [{' '.join(with_nodes)}] simultaneously")
                    return PreFilterOutcome(result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message),
                                            set(with_nodes))
        return PreFilterOutcome(result, rejection or SUCCESS, unschedulable | set(with_nodes))

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo,
                                         node: NodeInfo) -> Status:
        for name, ext in self.pre_filter_extensions:
            if name in state.skip_filter_plugins:
                continue
            status = _guard(name, "AddPod", lambda e=ext: e.add_pod(state, pod, to_add, node))  # type: ignore[misc]
            if not status.is_success():
                return Status.from_error(f"running AddPod on PreFilter plugin {name!r}: {status.message}", plugin=name)
        return SUCCESS

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo,
                                            node: NodeInfo) -> Status:
        for name, ext in self.pre_filter_extensions:
            if name in state.skip_filter_plugins:
                continue
            status = _guard(name, "RemovePod",
                            lambda e=ext: e.remove_pod(state, pod, to_remove, node))  # type: ignore[misc]
            if not status.is_success():
                return Status.from_error(f"running RemovePod on PreFilter plugin {name!r}: {status.message}",
                                    plugin=name)
        return SUCCESS

    def run_filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """Every Filter plugin on one node; the first rejection (or error) is the node's verdict."""
        skip = state.skip_filter_plugins
        for plugin in self.filter_plugins:
            if plugin.name in skip:
                continue
            status = self._filter_one(plugin, state, pod, node)
            if not status.is_success():
                return status
        return SUCCESS

    def _filter_one(self, plugin: FilterPlugin, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        try:
            status = plugin.filter(state, pod, node)
        except Exception as err:
            log.exception("Filter plugin %s failed on %s for node %s", plugin.name, pod.key, node.name)
            status = Status.from_error(f"{type(err).__name__}: {err}")
        if status.is_success():
            return SUCCESS
        if not status.is_rejected():
            return Status.from_error(f"running {plugin.name!r} filter plugin: {status.message}", plugin=plugin.name)
        return status.with_plugin(plugin.name)

    def run_filter_with_nominated_pods(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """Filter as if the equal-or-higher-priority Pods nominated to this node ran there, then as if not.

        Kubernetes' two passes: the Pod must fit both when the nominated Pods
        take their room (resources, anti-affinity) and when they do not come
        (affinity to them), a conservative decision either way.
        """
        nominated = [p for p in self._view.nominated_pods_for_node(node.name)
                     if p.priority >= pod.priority and p.uid != pod.uid]
        if not nominated:
            return self.run_filter(state, pod, node)
        node_with = node.clone()
        state_with = state.clone()
        for other in nominated:
            node_with.add_pod(other)
            status = self.run_pre_filter_extension_add_pod(state_with, pod, other, node_with)
            if not status.is_success():
                return status
        status = self.run_filter(state_with, pod, node_with)
        if not status.is_success():
            return status
        return self.run_filter(state, pod, node)

    # Handle's name for it.
    run_filter_plugins_with_nominated_pods = run_filter_with_nominated_pods

    def filter_nodes(self, state: CycleState, pod: PodInfo,
                     nodes: list[NodeInfo]) -> tuple[list[NodeInfo], list[tuple[NodeInfo, Status]], Status]:
        """Filter a chunk of nodes: (passed nodes in order, rejected nodes with their status, error or SUCCESS).

        The result is what :meth:`run_filter_with_nominated_pods` gives node by
        node; nodes without nominated Pods go through each plugin in one call.
        """
        rejected: list[tuple[NodeInfo, Status]] = []
        careful: list[NodeInfo] = []
        plain = nodes
        nominated = self._view.nominated_node_names()
        if nominated:
            # Nodes with nominated Pods need the two-pass check; it is rare, so they go one by one.
            plain = []
            for node in nodes:
                (careful if node.name in nominated else plain).append(node)
        skip = state.skip_filter_plugins
        for plugin in self.filter_plugins:
            if not plain:
                break
            if plugin.name in skip:
                continue
            batch = self._batch_filters.get(plugin.name)
            if batch is not None:
                try:
                    passed = batch(state, pod, plain)
                except Exception as err:
                    log.exception("Filter plugin %s failed on %s", plugin.name, pod.key)
                    return [], rejected, Status.from_error(f"{type(err).__name__}: {err}", plugin=plugin.name)
                if len(passed) != len(plain):
                    kept = {id(n) for n in passed}
                    for node in plain:
                        if id(node) not in kept:
                            status = self._filter_one(plugin, state, pod, node)
                            if status.is_success():
                                status = Status.from_error(f"plugin {plugin.name!r}: filter_nodes and filter disagree on "
                                                      f"node {node.name!r}", plugin=plugin.name)
                            if status.code is Code.ERROR:
                                return [], rejected, status
                            rejected.append((node, status))
                plain = passed
            else:
                keep: list[NodeInfo] = []
                for node in plain:
                    status = self._filter_one(plugin, state, pod, node)
                    if status is SUCCESS:
                        keep.append(node)
                    elif status.code is Code.ERROR:
                        return [], rejected, status
                    else:
                        rejected.append((node, status))
                plain = keep
        if not careful:
            return plain, rejected, SUCCESS
        passed_ids = {id(n) for n in plain}
        for node in careful:
            status = self.run_filter_with_nominated_pods(state, pod, node)
            if status.is_success():
                passed_ids.add(id(node))
            elif status.code is Code.ERROR:
                return [], rejected, status
            else:
                rejected.append((node, status))
        return [n for n in nodes if id(n) in passed_ids], rejected, SUCCESS

    # --- PostFilter ------------------------------------------------------------------------------

    def run_post_filter(self, state: CycleState, pod: PodInfo,
                        statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for plugin in self.post_filter_plugins:
            try:
                partial, status = plugin.post_filter(state, pod, statuses)
            except Exception as err:
                log.exception("PostFilter plugin %s failed on %s", plugin.name, pod.key)
                partial, status = None, Status.from_error(f"{type(err).__name__}: {err}")
            if status.is_success():
                return partial, status
            if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return partial, status.with_plugin(plugin.name)
            if not status.is_rejected():
                return None, Status.from_error(status.message, plugin=plugin.name)
            if partial is not None:
                result = partial
            reasons.extend(status.reasons)
            rejector = rejector or plugin.name
        return result, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)

    # --- PreScore and Score ----------------------------------------------------------------------

    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        for plugin in self.pre_score_plugins:
            status = _guard(plugin.name, "PreScore",
                            lambda p=plugin: p.pre_score(state, pod, nodes))  # type: ignore[misc]
            if status.is_skip():
                state.skip_score_plugins.add(plugin.name)
            elif not status.is_success():
                return Status.from_error(f"running PreScore plugin {plugin.name!r}: {status.message}", plugin=plugin.name)
        return SUCCESS

    def run_score(self, state: CycleState, pod: PodInfo,
                  nodes: Sequence[NodeInfo]) -> tuple[list[PluginScores], list[int]] | Status:
        """Each Score plugin's raw and normalized scores, and each node's weighted total; or an error."""
        results: list[PluginScores] = []
        totals = [0] * len(nodes)
        for plugin in self.score_plugins:
            if plugin.name in state.skip_score_plugins:
                continue
            normalizer = self._normalizers.get(plugin.name)
            try:
                raw = plugin.score(state, pod, nodes)
                normalized = normalizer(state, pod, nodes, raw) if normalizer is not None else raw
            except Exception as err:
                log.exception("Score plugin %s failed on %s", plugin.name, pod.key)
                return Status.from_error(f"running Score plugins: plugin {plugin.name!r} failed with: "
                                    f"{type(err).__name__}: {err}", plugin=plugin.name)
            if len(normalized) != len(nodes):
                return Status.from_error(f"plugin {plugin.name!r} scored {len(normalized)} nodes instead of {len(nodes)}",
                                    plugin=plugin.name)
            if normalized and (min(normalized) < MIN_NODE_SCORE or max(normalized) > MAX_NODE_SCORE):
                bad = next(s for s in normalized if not MIN_NODE_SCORE <= s <= MAX_NODE_SCORE)
                return Status.from_error(f"plugin {plugin.name!r} returns an invalid score {bad}, it should in the range "
                                    f"of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing", plugin=plugin.name)
            weight = self.score_weights[plugin.name]
            if weight == 1:
                totals = list(map(operator.add, totals, normalized))
            else:
                totals = [t + weight * s for t, s in zip(totals, normalized, strict=True)]
            results.append(PluginScores(plugin.name, weight, raw, normalized))
        return results, totals

    # --- Reserve and Bind ------------------------------------------------------------------------

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        for plugin in self.reserve_plugins:
            status = _guard(plugin.name, "Reserve",
                            lambda p=plugin: p.reserve(state, pod, node_name))  # type: ignore[misc]
            if not status.is_success():
                if status.is_rejected():
                    return status.with_plugin(plugin.name)
                return Status.from_error(f"running Reserve plugin {plugin.name!r}: {status.message}", plugin=plugin.name)
        return SUCCESS

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        # Unreserve runs in reverse order, and every plugin runs even if one fails.
        for plugin in reversed(self.reserve_plugins):
            try:
                plugin.unreserve(state, pod, node_name)
            except Exception:
                log.exception("Unreserve of plugin %s failed on %s", plugin.name, pod.key)

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """``RunPermitPlugins``: SUCCESS, a rejection, or WAIT (the Pod is then in :attr:`waiting_pods`)."""
        timeouts: dict[str, float] = {}
        for plugin in self.permit_plugins:
            try:
                status, timeout = plugin.permit(state, pod, node_name)
            except Exception as err:
                log.exception("Permit plugin %s failed on %s", plugin.name, pod.key)
                status, timeout = Status.from_error(f"{type(err).__name__}: {err}"), 0.0
            if status.is_success():
                continue
            if status.is_rejected():
                return status.with_plugin(plugin.name)
            if status.is_wait():
                timeouts[plugin.name] = timeout
                continue
            return Status.from_error(f"running Permit plugin {plugin.name!r}: {status.message}", plugin=plugin.name)
        if timeouts:
            self.waiting_pods.add(pod, timeouts)
            return Status(Code.WAIT, "one or more plugins asked to wait and no plugin rejected pod")
        return SUCCESS

    async def wait_on_permit(self, pod: PodInfo) -> Status:
        """``WaitOnPermit``: SUCCESS at once unless the Pod waits; then its outcome."""
        waiting = self.waiting_pods.get(pod.uid)
        if waiting is None:
            return SUCCESS
        try:
            return await waiting.wait()
        finally:
            self.waiting_pods.remove(pod.uid)

    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        for plugin in self.pre_bind_plugins:
            try:
                status = await plugin.pre_bind(state, pod, node_name)
            except Exception as err:
                log.exception("PreBind plugin %s failed on %s", plugin.name, pod.key)
                status = Status.from_error(f"{type(err).__name__}: {err}")
            if status.is_skip() or status.is_success():
                continue
            if status.is_rejected():
                return status.with_plugin(plugin.name)
            return Status(Code.ERROR, f"running PreBind plugin {plugin.name!r}: {status.message}",
                          plugin=plugin.name, error=status.error)
        return SUCCESS

    def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for plugin in self.post_bind_plugins:
            try:
                plugin.post_bind(state, pod, node_name)
            except Exception:
                log.exception("PostBind plugin %s failed on %s", plugin.name, pod.key)

    async def run_bind(self, state: CycleState, pod: PodInfo, node_name: str,
                       annotations: Mapping[str, str]) -> Status:
        for plugin in self.bind_plugins:
            try:
                status = await plugin.bind(state, pod, node_name, annotations)
            except Exception as err:
                log.exception("Bind plugin %s failed on %s", plugin.name, pod.key)
                status = Status.from_error(f"{type(err).__name__}: {err}")
            if status.is_skip():
                continue
            if not status.is_success():
                if status.is_rejected():
                    return status.with_plugin(plugin.name)
                return Status(Code.ERROR, f"running Bind plugin {plugin.name!r}: {status.message}",
                              plugin=plugin.name, error=status.error)
            return status
        return Status(Code.SKIP, "no bind plugin bound the pod")

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def list_plugins(self) -> dict[str, list[str]]:
        """The plugins of every extension point, in order (logged at start, as kube-scheduler does)."""
        return {
            "preEnqueue": [p.name for p in self.pre_enqueue_plugins],
            "queueSort": [self.queue_sort.name],
            "preFilter": [p.name for p in self.pre_filter_plugins],
            "filter": [p.name for p in self.filter_plugins],
            "postFilter": [p.name for p in self.post_filter_plugins],
            "preScore": [p.name for p in self.pre_score_plugins],
            "score": [f"{p.name}({self.score_weights[p.name]})" for p in self.score_plugins],
            "reserve": [p.name for p in self.reserve_plugins],
            "permit": [p.name for p in self.permit_plugins],
            "preBind": [p.name for p in self.pre_bind_plugins],
            "bind": [p.name for p in self.bind_plugins],
            "postBind": [p.name for p in self.post_bind_plugins],
        }


def _guard(plugin: str, point: str, call: Callable[[], Status]) -> Status:
    try:
        return call()
    except Exception as err:
        log.exception("%s plugin %s failed", point, plugin)
        return Status.from_error(f"{type(err).__name__}: {err}", plugin=plugin)

