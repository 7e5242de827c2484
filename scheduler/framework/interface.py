"""The scheduling framework's vocabulary: statuses, cycle state, plugin protocols and cluster events.

kube-scheduler is a pipeline of extension points (PreEnqueue, QueueSort,
PreFilter, Filter, PostFilter, PreScore, Score with NormalizeScore, Reserve,
Bind), each filled by plugins named in the profile. This module defines what
a plugin is, as ``k8s.io/kube-scheduler/framework`` does, so that plugins
depend only on it and on :mod:`scheduler.framework.types`:

- a plugin returns a :class:`Status` naming itself (outcomes are values;
  exceptions are for bugs, and the framework turns one into an ERROR status);
- what one scheduling cycle computes at one extension point and reads at
  another lives in its :class:`CycleState`, under typed :class:`StateKey`\\ s;
- an extension point is a :class:`typing.Protocol`; a plugin implements the
  ones it needs, and the framework finds out which with ``isinstance`` once,
  when the profile is built;
- two fast paths exist where Python needs them and Kubernetes does not:
  :class:`BatchFilterPlugin` filters a list of nodes in one call (and must
  agree with the per-node ``filter``, which still explains every rejection),
  and :class:`ScorePlugin` scores all feasible nodes in one call.

Differences from Kubernetes, on purpose: ``Pod`` arguments are
:class:`~scheduler.framework.types.PodInfo` (the Pod plus what is computed
once from it); there is no PENDING code; PreBind and Bind are coroutines
(they talk to the APIServer) and a Permit timeout is in seconds. Two
additions serve studies: :attr:`Handle.rng` (the scheduler's seeded random
source, so that a run can be repeated) and :meth:`Handle.activate` (what
Kubernetes' ``PodsToActivate`` cycle state does: move Pods back to activeQ).

Everything here is plain data, used from the event loop's thread only.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    import random

    from machinery.api.kinds import ResourceInfo
    from machinery.client import Client
    from machinery.informer import InformerFactory
    from machinery.informer.store import Store
    from scheduler.framework.types import NodeInfo, PodInfo

#: The highest score a plugin may give a node after normalization.
MAX_NODE_SCORE: Final = 100
#: The lowest.
MIN_NODE_SCORE: Final = 0


class Code(enum.IntEnum):
    """What a plugin says about a Pod (and a node), as ``framework.Code``."""

    SUCCESS = 0
    #: An internal error: the Pod goes back to the queue with backoff.
    ERROR = 1
    #: The Pod does not fit now; preemption or a cluster change may help.
    UNSCHEDULABLE = 2
    #: The Pod does not fit, and preempting Pods on this node would not help.
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    #: The plugin has nothing to do for this Pod: skip its later extension points in this cycle.
    SKIP = 4
    #: Permit only: the Pod waits (its binding cycle holds) until every waiting plugin allows or one rejects.
    WAIT = 5

    def __str__(self) -> str:
        return _CODE_NAMES[self]


_CODE_NAMES: Final = {
    Code.SUCCESS: "Success", Code.ERROR: "Error", Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable", Code.SKIP: "Skip", Code.WAIT: "Wait",
}


class Status:
    """A plugin's verdict: a code, the reasons (each counted in the FailedScheduling message) and the plugin.

    Immutable: the same instance may be shared (:data:`SUCCESS`, a plugin's
    constant rejection), so use :meth:`with_plugin` rather than changing one.
    """

    __slots__ = ("code", "error", "plugin", "reasons")

    def __init__(self, code: Code = Code.SUCCESS, *reasons: str, plugin: str = "",
                 error: Exception | None = None) -> None:
        self.code = code
        self.reasons = reasons
        self.plugin = plugin
        #: The exception behind an ERROR status, when there is one (Kubernetes' ``AsStatus(err)``).
        self.error = error

    @classmethod
    def from_error(cls, err: Exception | str, *, plugin: str = "") -> Status:
        """An ERROR status; an exception is kept so that callers can tell a Conflict from a timeout."""
        if isinstance(err, str):
            return cls(Code.ERROR, err, plugin=plugin)
        return cls(Code.ERROR, str(err) or type(err).__name__, plugin=plugin, error=err)

    def is_success(self) -> bool:
        return self.code is Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code is Code.SKIP

    def is_wait(self) -> bool:
        return self.code is Code.WAIT

    def is_rejected(self) -> bool:
        """Unschedulable, resolvable or not (as opposed to an error)."""
        return self.code is Code.UNSCHEDULABLE or self.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE

    @property
    def message(self) -> str:
        """The reasons joined as Kubernetes joins them."""
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        if self.plugin == plugin:
            return self
        return Status(self.code, *self.reasons, plugin=plugin, error=self.error)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return (self.code, self.reasons, self.plugin) == (other.code, other.reasons, other.plugin)

    def __hash__(self) -> int:
        return hash((self.code, self.reasons, self.plugin))

    def __repr__(self) -> str:
        plugin = f", plugin={self.plugin!r}" if self.plugin else ""
        reasons = "".join(f", {r!r}" for r in self.reasons)
        return f"Status({self.code}{reasons}{plugin})"


#: The shared success status (Kubernetes' nil *Status).
SUCCESS: Final = Status()
#: The shared skip status.
SKIP: Final = Status(Code.SKIP)

T = TypeVar("T")


class StateData(Protocol):
    """Anything stored in a CycleState: it must copy itself for preemption's what-if runs."""

    def clone(self) -> StateData: ...


S = TypeVar("S", bound=StateData)


class StateKey(Generic[S]):
    """A typed key of :class:`CycleState`, so that ``state.read(KEY)`` has the right type.

    >>> PRE_FILTER: Final = StateKey[FitState]("PreFilterNodeResourcesFit")
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"StateKey({self.name!r})"


class CycleState:
    """What the plugins computed during one scheduling cycle of one Pod, and which plugins skip what.

    Created per cycle and dropped at its end; preemption clones it to ask "what
    if these Pods were gone" without disturbing the real one.
    """

    __slots__ = ("_data", "skip_filter_plugins", "skip_score_plugins")

    def __init__(self) -> None:
        self._data: dict[str, StateData] = {}
        #: Plugins whose PreFilter returned SKIP: their Filter is not run.
        self.skip_filter_plugins: set[str] = set()
        #: Plugins whose PreScore returned SKIP: their Score is not run.
        self.skip_score_plugins: set[str] = set()

    def write(self, key: StateKey[S], value: S) -> None:
        self._data[key.name] = value

    def read(self, key: StateKey[S]) -> S:
        """The value written under ``key``; KeyError when it was not (its PreFilter did not run)."""
        value: Any = self._data[key.name]
        return value  # type: ignore[no-any-return]

    def clone(self) -> CycleState:
        copy = CycleState()
        copy._data = {name: value.clone() for name, value in self._data.items()}
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        return copy


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """PreFilter's "only these nodes can fit" (``None`` means all nodes)."""

    node_names: frozenset[str] | None = None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        """The intersection of two results (an absent result allows every node)."""
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """What PostFilter decided: the node the Pod is nominated to once its victims are gone ("" to clear)."""

    nominated_node_name: str


# --- cluster events, for requeueing unschedulable Pods --------------------------------------------------


class EventResource(enum.Enum):
    """What a cluster event is about. ``POD`` means Pods assigned to nodes (the cache's Pods)."""

    POD = "Pod"
    NODE = "Node"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    PERSISTENT_VOLUME = "PersistentVolume"
    STORAGE_CLASS = "storage.k8s.io/StorageClass"
    CSI_NODE = "storage.k8s.io/CSINode"
    WILDCARD = "*"


class ActionType(enum.IntFlag):
    """What happened to it (``framework.ActionType``); updates are split by what changed."""

    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE = (UPDATE_NODE_ALLOCATABLE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT | UPDATE_NODE_CONDITION
              | UPDATE_NODE_ANNOTATION | UPDATE_POD_LABEL | UPDATE_POD_SCALE_DOWN)
    ALL = ADD | DELETE | UPDATE


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """Something that changed in the cluster and may make unschedulable Pods schedulable."""

    resource: EventResource
    action: ActionType
    #: A short label for logs and the ``Unschedulable`` timeout ("NodeAdd", "AssignedPodDelete"...).
    label: str = ""

    def matches(self, incoming: ClusterEvent) -> bool:
        """Whether ``incoming`` is this (registered) event or a more specific form of it."""
        if self.resource is EventResource.WILDCARD:
            return True
        return self.resource is incoming.resource and bool(self.action & incoming.action)


# --- what plugins are given ---------------------------------------------------------------------------


class NodeInfoLister(Protocol):
    """The scheduler's view of the nodes (the cache), as ``SharedLister.NodeInfos()``."""

    def node_infos(self) -> Sequence[NodeInfo]:
        """Every node, in the order cycles visit them (zones interleaved)."""
        ...

    def get(self, name: str) -> NodeInfo | None: ...

    def have_pods_with_affinity(self) -> Sequence[NodeInfo]: ...

    def have_pods_with_required_anti_affinity(self) -> Sequence[NodeInfo]: ...

    def image_spread(self, image: str) -> int:
        """On how many nodes this image is present."""
        ...

    @property
    def generation(self) -> int:
        """The generation of the latest change to any node (its Node, its Pods, its removal)."""
        ...

    def changed_since(self, generation: int) -> Sequence[str]:
        """The names of the nodes changed or removed after ``generation``."""
        ...


class Handle(Protocol):
    """What a plugin may use besides the Pod and nodes it is handed (``framework.Handle``)."""

    @property
    def scheduler_name(self) -> str: ...

    @property
    def snapshot(self) -> NodeInfoLister: ...

    @property
    def client(self) -> Client: ...

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The labels of a namespace, None when it is unknown."""
        ...

    def namespaces_matching(self, selector: Any) -> list[str]:
        """The names of the namespaces whose labels a label Selector matches."""
        ...

    def lister(self, resource: ResourceInfo[Any]) -> Store[Any] | None:
        """The scheduler's informer cache of a resource (``SharedInformerFactory().X().Lister()``);
        None when the scheduler does not watch it."""
        ...

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]: ...

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: PodInfo,
                                               node: NodeInfo) -> Status: ...

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo,
                                         node: NodeInfo) -> Status: ...

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo,
                                            node: NodeInfo) -> Status: ...

    def preempt(self, pod: PodInfo, node_name: str, victims: Sequence[PodInfo]) -> None:
        """Start evicting ``victims`` from ``node_name`` for ``pod`` (the API calls run in the background)."""
        ...

    @property
    def informers(self) -> InformerFactory:
        """The process's shared informers (``SharedInformerFactory()``): a plugin may watch what it needs."""
        ...

    @property
    def rng(self) -> random.Random:
        """The scheduler's random source (seeded by ``--seed``): plugins that draw use it, so runs repeat."""
        ...

    def activate(self, uids: Iterable[str]) -> None:
        """Move the Pods of these uids to activeQ at once if they wait in the queue (``PodsToActivate``)."""
        ...

    def iterate_over_waiting_pods(self, callback: Callable[[WaitingPod], None]) -> None:
        """Call ``callback`` on every Pod waiting at Permit (``IterateOverWaitingPods``)."""
        ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def reject_waiting_pod(self, uid: str) -> bool:
        """Reject a waiting Pod on behalf of every plugin it waits for; whether there was one."""
        ...


class WaitingPod(Protocol):
    """A Pod held at Permit: its binding cycle waits until every plugin that asked it to wait allows it."""

    @property
    def pod(self) -> PodInfo: ...

    def pending_plugins(self) -> list[str]:
        """The plugins that have not allowed the Pod yet."""
        ...

    def allow(self, plugin: str) -> None:
        """``plugin`` lets the Pod go; it binds once no plugin is pending."""
        ...

    def reject(self, plugin: str, message: str = "") -> None:
        """``plugin`` refuses the Pod: its binding cycle ends Unschedulable with ``message``."""
        ...


# --- extension points ------------------------------------------------------------------------------------


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: PodInfo) -> Status:
        """SUCCESS lets the Pod into the active queue; anything else keeps it waiting ("gated")."""
        ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfoLike, b: QueuedPodInfoLike) -> bool:
        """Whether ``a`` is scheduled before ``b``."""
        ...


class QueuedPodInfoLike(Protocol):
    """What queue sorting may read of a queued Pod."""

    @property
    def pod_info(self) -> PodInfo: ...

    @property
    def timestamp(self) -> float: ...


class PreFilterExtensions(Protocol):
    """Keeps a PreFilter's state right when preemption adds or removes Pods in its what-if runs."""

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status: ...

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status]:
        """Compute what Filter needs; SKIP when this Pod gives the plugin nothing to check."""
        ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """Whether the Pod may run on this node, and if not why."""
        ...


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
        """The nodes ``filter`` would pass, in order: the fast path for thousands of nodes.

        It must agree with ``filter`` node for node; the framework calls
        ``filter`` on each node this drops, to learn why.
        """
        ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(self, state: CycleState, pod: PodInfo,
                    statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        """Try to make the Pod schedulable later (preemption); called when no node fits."""
        ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """Compute what Score needs; SKIP when every node would score the same."""
        ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """A raw score per node, in order (normalized afterwards, if the plugin normalizes)."""
        ...


@runtime_checkable
class NormalizeScorePlugin(ScorePlugin, Protocol):
    def normalize_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo],
                        scores: list[int]) -> list[int]:
        """The scores brought into 0..MAX_NODE_SCORE, as a new list (the raw ones are kept for explanations)."""
        ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        """SUCCESS, a rejection, or WAIT with a timeout in seconds (the Pod is rejected when it runs out)."""
        ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Awaitable[Status]:
        """Prepare the binding in the binding cycle (VolumeBinding writes and waits for volumes here)."""
        ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Told that the Pod is bound (informational: nothing can fail here)."""
        ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    def bind(self, state: CycleState, pod: PodInfo, node_name: str,
             annotations: Mapping[str, str]) -> Awaitable[Status]:
        """Bind the Pod (SKIP: not this plugin's Pod, try the next binder).

        ``annotations`` go onto the Pod in the same write (the explanation).
        """
        ...


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    def events_to_register(self) -> list[ClusterEvent]:
        """The cluster events that may make a Pod this plugin rejected schedulable."""
        ...


class NodeToStatus:
    """The rejection of each node that was evaluated, and one status for every node that was not.

    ``absent`` is what PreFilter said for all nodes (it rejected the Pod
    outright) or "not among PreFilter's nodes"; ``None`` when nodes left out
    were simply not evaluated.
    """

    __slots__ = ("absent", "statuses")

    def __init__(self) -> None:
        self.statuses: dict[str, Status] = {}
        self.absent: Status | None = None

    def get(self, node_name: str) -> Status:
        status = self.statuses.get(node_name)
        if status is not None:
            return status
        return self.absent if self.absent is not None else _UNRESOLVABLE_ABSENT

    def __len__(self) -> int:
        return len(self.statuses)


# Kubernetes' NodeToStatus answers UnschedulableAndUnresolvable for nodes it never saw.
_UNRESOLVABLE_ABSENT: Final = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

PluginFactory = Callable[[Mapping[str, Any] | None, Handle], Plugin]
