"""Node profiles: which nodes a kubelet_sim process registers, what each holds, how fast it acts.

Users describe a simulated cluster in YAML instead of code (the packaged
``default-profile.yaml`` is the reference)::

    apiVersion: kubesim.io/v1alpha1
    kind: NodeProfile
    clusterCIDR: 10.0.0.0/8        # node k gets the k-th /nodeCIDRMaskSize subnet as spec.podCIDR
    nodeCIDRMaskSize: 24
    nodeGroups:
      - name: worker               # for messages only
        count: 3                   # scaled by --nodes, proportionally across groups
        namePattern: node-{index}  # {index} counts from 1 within the group
        zones: [zone-a, zone-b]    # round-robin topology.kubernetes.io/zone (optional)
        region: region-1           # topology.kubernetes.io/region (optional)
        os: linux                  # kubernetes.io/os and nodeInfo (default linux)
        arch: amd64                # kubernetes.io/arch and nodeInfo (default amd64)
        labels: {...}              # any other labels
        taints: [{key: k, value: v, effect: NoSchedule}]
        capacity: {cpu: "4", memory: 16Gi, pods: "110", example.com/gpu: "2"}
        allocatable: {cpu: 3800m}  # per resource; what is missing equals the capacity
    timings:
      containerStartDelay: 1s      # container start (pull included), drawn from delay +- jitter
      containerStartJitter: 500ms
      nodeLeaseDurationSeconds: 40
      nodeLeaseRenewInterval: 10s
      nodeStatusUpdateFrequency: 10s
      nodeStatusReportFrequency: 5m
      evictionMonitoringPeriod: 10s          # how often memory pressure is checked
      evictionPressureTransitionPeriod: 5m   # how long MemoryPressure stays after the last breach
    usage:                         # simulated usage of a container whose Pod does not script it
      cpuRequestsFraction: 0.5     # (kubesim.io/cpu-usage, kubesim.io/memory-usage; see kubelet_sim/usage.py)
      memoryRequestsFraction: 0.6
      cpuFloor: 5m
      memoryFloor: 16Mi
      noise: 0.1                   # +-10%, per container and 10-second window
      systemCPU: 100m              # what each node uses besides its Pods
      systemMemory: 512Mi
    evictionHard:
      memory.available: 100Mi      # MemoryPressure and evictions below this (capacity - working set)

Every node also gets the labels a kubelet always sets (``kubernetes.io/hostname``,
``kubernetes.io/os``, ``kubernetes.io/arch`` and their ``beta.`` forms).
Mistakes are reported with their path (``nodeGroups[0].capacity.cpu: ...``),
unknown keys included, so a typo never silently changes the cluster.

Pure functions and frozen values; the only I/O is reading the file.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

import yaml

from kubelet_sim.usage import UsageProfile
from machinery.api.duration import parse_duration
from machinery.api.names import is_dns1123_subdomain, is_qualified_name, is_valid_label_value
from machinery.api.quantity import milli_value

API_VERSION: Final = "kubesim.io/v1alpha1"
KIND: Final = "NodeProfile"
DEFAULT_PROFILE: Final = "default-profile.yaml"

LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
LABEL_OS: Final = "kubernetes.io/os"
LABEL_ARCH: Final = "kubernetes.io/arch"
LABEL_ZONE: Final = "topology.kubernetes.io/zone"
LABEL_REGION: Final = "topology.kubernetes.io/region"
_LEGACY_LABEL_OS: Final = "beta.kubernetes.io/os"
_LEGACY_LABEL_ARCH: Final = "beta.kubernetes.io/arch"

_TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_REQUIRED_RESOURCES: Final = ("cpu", "memory")
_DEFAULT_MAX_PODS: Final = "110"


class ProfileError(ValueError):
    """The profile cannot be used; the message names the file and the field."""


@dataclass(frozen=True, slots=True)
class Timings:
    """How fast the simulated kubelets act, in seconds."""

    container_start_delay: float = 1.0
    container_start_jitter: float = 0.5
    node_lease_duration_seconds: int = 40
    node_lease_renew_interval: float = 10.0
    node_status_update_frequency: float = 10.0
    node_status_report_frequency: float = 300.0
    #: How often the eviction manager looks at memory (the kubelet's housekeeping interval).
    eviction_monitoring_period: float = 10.0
    #: How long memory must stay above the threshold before MemoryPressure clears.
    eviction_pressure_transition_period: float = 300.0


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """Nodes that share a shape. Quantities stay as written; they are valid Kubernetes quantities."""

    name: str
    count: int
    name_pattern: str
    capacity: Mapping[str, str]
    allocatable: Mapping[str, str]
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...]
    zones: tuple[str, ...] = ()
    region: str = ""
    os: str = "linux"
    arch: str = "amd64"

    def node_name(self, index: int) -> str:
        """The name of the group's node number ``index`` (from 1)."""
        return self.name_pattern.replace("{index}", str(index))


@dataclass(frozen=True, slots=True)
class PlannedNode:
    """One concrete node to register: its name, group, full label set and Pod CIDR."""

    name: str
    group: NodeGroup
    labels: Mapping[str, str]
    pod_cidr: str


@dataclass(frozen=True, slots=True)
class NodeProfile:
    groups: tuple[NodeGroup, ...]
    cluster_cidr: ipaddress.IPv4Network | ipaddress.IPv6Network
    node_cidr_mask_size: int
    timings: Timings
    usage: UsageProfile = field(default_factory=UsageProfile)
    #: ``evictionHard``'s ``memory.available``, in bytes.
    eviction_memory_available: int = 100 * 1024 * 1024

    @property
    def node_count(self) -> int:
        return sum(g.count for g in self.groups)

    def plan(self, nodes: int | None = None, *, offset: int = 0) -> list[PlannedNode]:
        """The nodes to register: the profile's counts, or ``nodes`` shared out in proportion.

        ``offset`` makes this one shard of a cluster that several kubelet_sim processes host
        (``--node-offset``): its nodes are numbered after the ``offset`` nodes the shards before it
        host, names, zones and Pod CIDRs included, so consecutive shards of one profile never
        collide. Only a profile of one node group can be sharded so (give each shard a profile of
        its own otherwise).

        Raises :class:`ProfileError` when the cluster CIDR has too few subnets, two groups'
        patterns give the same name, or an offset is given for several groups.
        """
        if offset and len(self.groups) != 1:
            raise ProfileError("--node-offset needs a node profile with one node group; for several "
                               "groups, give each shard its own profile with distinct namePatterns")
        counts = [g.count for g in self.groups]
        if nodes is not None:
            counts = _share(nodes, counts)
        total = offset + sum(counts)
        room = 2 ** (self.node_cidr_mask_size - self.cluster_cidr.prefixlen)
        if total > room:
            raise ProfileError(f"clusterCIDR {self.cluster_cidr} holds {room} subnets of "
                               f"/{self.node_cidr_mask_size}, not enough for {total} nodes: use a larger "
                               "clusterCIDR or nodeCIDRMaskSize")
        step = 2 ** (self.cluster_cidr.max_prefixlen - self.node_cidr_mask_size)
        base = int(self.cluster_cidr.network_address)
        planned: list[PlannedNode] = []
        seen: set[str] = set()
        for group, count in zip(self.groups, counts, strict=True):
            for index in range(offset + 1, offset + count + 1):
                name = group.node_name(index)
                if name in seen:
                    raise ProfileError(f'node group "{group.name}" names a node "{name}" that another group '
                                       "also names: give the groups different namePatterns")
                seen.add(name)
                address = ipaddress.ip_address(base + (offset + len(planned)) * step)
                planned.append(PlannedNode(name, group, _node_labels(group, name, index),
                                           f"{address}/{self.node_cidr_mask_size}"))
        return planned


def _share(total: int, weights: list[int]) -> list[int]:
    """``total`` split in proportion to ``weights`` by largest remainder (ties to the first group)."""
    whole = sum(weights)
    if whole == 0:
        return [total] + [0] * (len(weights) - 1)
    exact = [total * w / whole for w in weights]
    counts = [int(x) for x in exact]
    by_remainder = sorted(range(len(weights)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in by_remainder[:total - sum(counts)]:
        counts[i] += 1
    return counts


def _node_labels(group: NodeGroup, name: str, index: int) -> dict[str, str]:
    labels = dict(group.labels)
    # The kubelet's own labels win over the profile's, as they do over --node-labels.
    labels.update({LABEL_HOSTNAME: name, LABEL_OS: group.os, LABEL_ARCH: group.arch,
                   _LEGACY_LABEL_OS: group.os, _LEGACY_LABEL_ARCH: group.arch})
    if group.zones:
        labels[LABEL_ZONE] = group.zones[(index - 1) % len(group.zones)]
    if group.region:
        labels[LABEL_REGION] = group.region
    return labels


# --- loading ----------------------------------------------------------------------------------------


def load_profile(path: str | Path | None = None) -> NodeProfile:
    """Read and validate a profile file; ``None`` is the packaged default."""
    if path is None:
        text = resources.files("kubelet_sim").joinpath(DEFAULT_PROFILE).read_text()
        source = DEFAULT_PROFILE
    else:
        source = str(path)
        try:
            text = Path(path).read_text()
        except OSError as err:
            raise ProfileError(f"cannot read node profile {source}: {err.strerror or err}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ProfileError(f"node profile {source} is not valid YAML: {err}") from None
    return parse_profile(doc, source)


def parse_profile(doc: Any, source: str = "profile") -> NodeProfile:
    """Validate a parsed profile document; every problem is reported, not just the first."""
    errors: list[str] = []
    top = _Fields(doc, "", errors)
    api_version = top.string("apiVersion", API_VERSION)
    if api_version != API_VERSION:
        errors.append(f'apiVersion: Unsupported value: "{api_version}": supported values: "{API_VERSION}"')
    kind = top.string("kind", KIND)
    if kind != KIND:
        errors.append(f'kind: Unsupported value: "{kind}": supported values: "{KIND}"')
    cidr_text = top.string("clusterCIDR", "10.0.0.0/8")
    try:
        cluster_cidr = ipaddress.ip_network(cidr_text)
    except ValueError as err:
        errors.append(f'clusterCIDR: Invalid value: "{cidr_text}": {err}')
        cluster_cidr = ipaddress.ip_network("10.0.0.0/8")
    mask = top.integer("nodeCIDRMaskSize", 24)
    if not cluster_cidr.prefixlen <= mask <= cluster_cidr.max_prefixlen - 2:
        errors.append(f"nodeCIDRMaskSize: Invalid value: {mask}: must be between the clusterCIDR's prefix "
                      f"length {cluster_cidr.prefixlen} and {cluster_cidr.max_prefixlen - 2}")
        mask = min(max(mask, cluster_cidr.prefixlen), cluster_cidr.max_prefixlen - 2)
    groups = tuple(_group(item, f"nodeGroups[{i}]", errors)
                   for i, item in enumerate(top.sequence("nodeGroups")))
    if not groups and not errors:
        errors.append("nodeGroups: Required value: at least one node group")
    # Every admitted Pod holds one address of its node's podCIDR (less network, gateway, broadcast).
    addresses = 2 ** (cluster_cidr.max_prefixlen - mask) - 3
    for i, group in enumerate(groups):
        pods = group.allocatable.get("pods")
        if pods is not None and _whole(pods) > addresses:
            errors.append(f'nodeGroups[{i}].allocatable.pods: Invalid value: "{pods}": more Pods than the '
                          f"{addresses} addresses of a /{mask} podCIDR (nodeCIDRMaskSize)")
    timings = _timings(top.mapping("timings"), errors)
    usage = _usage(top.mapping("usage"), errors)
    eviction = _Fields(top.mapping("evictionHard"), "evictionHard", errors)
    threshold_text = eviction.string("memory.available", "100Mi")
    eviction.reject_unknown()
    try:
        threshold = -(-milli_value(threshold_text) // 1000)
    except ValueError as err:
        errors.append(f'evictionHard.memory.available: Invalid value: "{threshold_text}": {err}')
        threshold = 100 * 1024 * 1024
    top.reject_unknown()
    if errors:
        raise ProfileError(f"node profile {source} is invalid:\n  " + "\n  ".join(errors))
    return NodeProfile(groups, cluster_cidr, mask, timings, usage, threshold)


def _usage(doc: Any, errors: list[str]) -> UsageProfile:
    fields = _Fields(doc, "usage", errors)
    default = UsageProfile()

    def fraction(key: str, value: float) -> float:
        raw = fields.string(key, str(value))
        try:
            number = float(raw)
            if not 0 <= number < 1e6:
                raise ValueError
        except ValueError:
            errors.append(f'usage.{key}: Invalid value: "{raw}": must be a non-negative number')
            return value
        return number

    def quantity(key: str, value: float, scale: float) -> float:
        raw = fields.string(key, "")
        if not raw:
            return value
        try:
            amount = milli_value(raw)
            if amount < 0:
                raise ValueError("must not be negative")
        except ValueError as err:
            errors.append(f'usage.{key}: Invalid value: "{raw}": {err}')
            return value
        return amount / scale

    usage = UsageProfile(
        cpu_requests_fraction=fraction("cpuRequestsFraction", default.cpu_requests_fraction),
        memory_requests_fraction=fraction("memoryRequestsFraction", default.memory_requests_fraction),
        cpu_floor=quantity("cpuFloor", default.cpu_floor, 1.0),
        memory_floor=quantity("memoryFloor", default.memory_floor, 1000.0),
        noise=min(fraction("noise", default.noise), 1.0),
        system_cpu=quantity("systemCPU", default.system_cpu, 1.0),
        system_memory=quantity("systemMemory", default.system_memory, 1000.0),
    )
    fields.reject_unknown()
    return usage


def _group(doc: Any, path: str, errors: list[str]) -> NodeGroup:
    fields = _Fields(doc, path, errors)
    name = fields.string("name", "")
    if not name:
        errors.append(f"{path}.name: Required value")
    count = fields.integer("count", 1)
    if count < 0:
        errors.append(f"{path}.count: Invalid value: {count}: must be greater than or equal to 0")
    pattern = fields.string("namePattern", f"{name}-{{index}}")
    if "{index}" not in pattern and count > 1:
        errors.append(f'{path}.namePattern: Invalid value: "{pattern}": must contain {{index}} '
                      "when count > 1")
    for msg in is_dns1123_subdomain(pattern.replace("{index}", "1")):
        errors.append(f'{path}.namePattern: Invalid value: "{pattern}": {msg}')
    raw_capacity = fields.mapping("capacity")
    capacity = _quantities(raw_capacity, f"{path}.capacity", errors)
    for resource in _REQUIRED_RESOURCES:
        if resource not in raw_capacity:
            errors.append(f"{path}.capacity.{resource}: Required value")
    capacity.setdefault("pods", _DEFAULT_MAX_PODS)
    allocatable = dict(capacity)
    for resource, amount in _quantities(fields.mapping("allocatable"), f"{path}.allocatable", errors).items():
        if resource not in capacity:
            errors.append(f"{path}.allocatable.{resource}: Invalid value: \"{amount}\": not in the capacity")
        elif milli_value(amount) > milli_value(capacity[resource]):
            errors.append(f'{path}.allocatable.{resource}: Invalid value: "{amount}": '
                          f"more than the capacity {capacity[resource]}")
        else:
            allocatable[resource] = amount
    labels = _labels(fields.mapping("labels"), f"{path}.labels", errors)
    taints = tuple(_taint(t, f"{path}.taints[{i}]", errors) for i, t in enumerate(fields.sequence("taints")))
    zones = tuple(_label_value(zone, f"{path}.zones[{i}]", errors)
                  for i, zone in enumerate(fields.sequence("zones")))
    region = _label_value(fields.string("region", ""), f"{path}.region", errors)
    os_name = _label_value(fields.string("os", "linux"), f"{path}.os", errors)
    arch = _label_value(fields.string("arch", "amd64"), f"{path}.arch", errors)
    fields.reject_unknown()
    return NodeGroup(name=name, count=count, name_pattern=pattern, capacity=capacity, allocatable=allocatable,
                     labels=labels, taints=taints, zones=zones, region=region, os=os_name, arch=arch)


def _timings(doc: Any, errors: list[str]) -> Timings:
    fields = _Fields(doc, "timings", errors)
    default = Timings()
    timings = Timings(
        container_start_delay=fields.duration("containerStartDelay", default.container_start_delay),
        container_start_jitter=fields.duration("containerStartJitter", default.container_start_jitter),
        node_lease_duration_seconds=fields.integer("nodeLeaseDurationSeconds",
                                                   default.node_lease_duration_seconds),
        node_lease_renew_interval=fields.duration("nodeLeaseRenewInterval",
                                                  default.node_lease_renew_interval),
        node_status_update_frequency=fields.duration("nodeStatusUpdateFrequency",
                                                     default.node_status_update_frequency),
        node_status_report_frequency=fields.duration("nodeStatusReportFrequency",
                                                     default.node_status_report_frequency),
        eviction_monitoring_period=fields.duration("evictionMonitoringPeriod", default.eviction_monitoring_period),
        eviction_pressure_transition_period=fields.duration("evictionPressureTransitionPeriod",
                                                            default.eviction_pressure_transition_period),
    )
    fields.reject_unknown()
    if timings.node_lease_duration_seconds <= 0:
        errors.append("timings.nodeLeaseDurationSeconds: Invalid value: "
                      f"{timings.node_lease_duration_seconds}: must be greater than 0")
    for key, seconds in (("nodeLeaseRenewInterval", timings.node_lease_renew_interval),
                         ("evictionMonitoringPeriod", timings.eviction_monitoring_period),
                         ("nodeStatusUpdateFrequency", timings.node_status_update_frequency),
                         ("nodeStatusReportFrequency", timings.node_status_report_frequency)):
        if seconds <= 0:
            errors.append(f"timings.{key}: Invalid value: {seconds}s: must be greater than 0")
    if timings.node_status_report_frequency < timings.node_status_update_frequency:
        errors.append("timings.nodeStatusReportFrequency: Invalid value: must not be shorter than "
                      "nodeStatusUpdateFrequency")
    return timings


def _whole(quantity: str) -> int:
    return -(-milli_value(quantity) // 1000)


def _quantities(doc: Mapping[str, Any], path: str, errors: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for resource, raw in doc.items():
        text = str(raw)
        for msg in is_qualified_name(resource):
            errors.append(f"{path}: Invalid value: \"{resource}\": {msg}")
        try:
            if milli_value(text) < 0:
                errors.append(f'{path}.{resource}: Invalid value: "{text}": '
                              "must be greater than or equal to 0")
                continue
        except ValueError as err:
            errors.append(f'{path}.{resource}: Invalid value: "{text}": {err}')
            continue
        out[resource] = text
    return out


def _labels(doc: Mapping[str, Any], path: str, errors: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, raw in doc.items():
        for msg in is_qualified_name(key):
            errors.append(f'{path}: Invalid value: "{key}": {msg}')
        out[key] = _label_value(raw, f"{path}.{key}", errors)
    return out


def _label_value(raw: Any, path: str, errors: list[str]) -> str:
    text = "" if raw is None else str(raw)
    for msg in is_valid_label_value(text):
        errors.append(f'{path}: Invalid value: "{text}": {msg}')
    return text


def _taint(doc: Any, path: str, errors: list[str]) -> dict[str, str]:
    fields = _Fields(doc, path, errors)
    key = fields.string("key", "")
    value = fields.string("value", "")
    effect = fields.string("effect", "")
    fields.reject_unknown()
    if not key:
        errors.append(f"{path}.key: Required value")
    if key:
        errors.extend(f'{path}.key: Invalid value: "{key}": {msg}' for msg in is_qualified_name(key))
    for msg in is_valid_label_value(value):
        errors.append(f'{path}.value: Invalid value: "{value}": {msg}')
    if effect not in _TAINT_EFFECTS:
        supported = ", ".join(f'"{e}"' for e in _TAINT_EFFECTS)
        errors.append(f'{path}.effect: Unsupported value: "{effect}": supported values: {supported}')
    taint = {"key": key, "effect": effect}
    if value:
        taint["value"] = value
    return taint


class _Fields:
    """Typed reads from one mapping of the document, recording problems with their path."""

    def __init__(self, doc: Any, path: str, errors: list[str]) -> None:
        self._path = path
        self._errors = errors
        self._seen: set[str] = set()
        if doc is None:
            doc = {}
        if not isinstance(doc, Mapping):
            errors.append(f"{path or 'profile'}: Invalid value: must be a mapping, not {type(doc).__name__}")
            doc = {}
        self._doc: Mapping[Any, Any] = doc

    def _child(self, key: str) -> str:
        return f"{self._path}.{key}" if self._path else key

    def _get(self, key: str) -> Any:
        self._seen.add(key)
        return self._doc.get(key)

    def string(self, key: str, default: str) -> str:
        raw = self._get(key)
        if raw is None:
            return default
        if isinstance(raw, (dict, list)):
            self._errors.append(f"{self._child(key)}: Invalid value: must be a string")
            return default
        return str(raw)

    def integer(self, key: str, default: int) -> int:
        raw = self._get(key)
        if raw is None:
            return default
        if isinstance(raw, bool) or not isinstance(raw, int):
            self._errors.append(f"{self._child(key)}: Invalid value: {raw!r}: must be an integer")
            return default
        return raw

    def duration(self, key: str, default: float) -> float:
        raw = self._get(key)
        if raw is None:
            return default
        try:
            seconds = parse_duration(str(raw))
        except ValueError as err:
            self._errors.append(f"{self._child(key)}: Invalid value: {raw!r}: {err}")
            return default
        if seconds < 0:
            self._errors.append(f"{self._child(key)}: Invalid value: {raw!r}: must not be negative")
            return default
        return seconds

    def mapping(self, key: str) -> Mapping[str, Any]:
        raw = self._get(key)
        if raw is None:
            return {}
        if not isinstance(raw, Mapping) or not all(isinstance(k, str) for k in raw):
            self._errors.append(f"{self._child(key)}: Invalid value: must be a mapping with string keys")
            return {}
        return raw

    def sequence(self, key: str) -> list[Any]:
        raw = self._get(key)
        if raw is None:
            return []
        if not isinstance(raw, list):
            self._errors.append(f"{self._child(key)}: Invalid value: must be a list")
            return []
        return raw

    def reject_unknown(self) -> None:
        for key in self._doc:
            if key not in self._seen:
                self._errors.append(f'{self._child(str(key))}: Invalid value: unknown field "{key}"')
