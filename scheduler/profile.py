"""Scheduler configuration: a KubeSchedulerConfiguration file, defaulted as kube-scheduler defaults it.

``python -m scheduler --config FILE`` reads the same YAML kube-scheduler
reads (``kubescheduler.config.k8s.io/v1``)::

    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    percentageOfNodesToScore: 0          # 0: adaptive, 50% down to 5% as the cluster grows
    podInitialBackoffSeconds: 1
    podMaxBackoffSeconds: 10
    profiles:
    - schedulerName: default-scheduler
      plugins:
        multiPoint:
          enabled: [{name: MyPlugin}]
          disabled: [{name: ImageLocality}]
        score:
          enabled: [{name: NodeResourcesFit, weight: 5}]
      pluginConfig:
      - name: NodeResourcesFit
        args: {scoringStrategy: {type: MostAllocated}}
    - schedulerName: bin-packer
      ...

Each profile's ``plugins`` are merged onto the default plugins as Kubernetes'
v1 defaulting merges them (``mergePlugins``): a disabled default is dropped
(``*`` drops them all), a default enabled again keeps its place with the new
settings, other enabled plugins are appended. Several profiles serve several
``schedulerName``\\ s from one process; they must share their queue sort.

Fields kube-scheduler has but kubesim does not use (``parallelism``,
``clientConnection``, ``leaderElection``: use the flags) are accepted and
ignored; unknown fields are errors, as strict decoding makes them.

Pure parsing; nothing here does I/O except :func:`load_config` reading the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from scheduler.framework.runtime import (
    EXTENSION_POINTS,
    UNSUPPORTED_EXTENSION_POINTS,
    PluginRef,
    PluginSet,
    ProfileSpec,
)
from scheduler.plugins import names

API_VERSION: Final = "kubescheduler.config.k8s.io/v1"
KIND: Final = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"

#: Kubernetes' default plugins (``getDefaultPlugins``), minus VolumeZone and the cloud disk limits.
DEFAULT_PLUGINS: Final = PluginSet(enabled=(
    PluginRef(names.SCHEDULING_GATES),
    PluginRef(names.PRIORITY_SORT),
    PluginRef(names.NODE_UNSCHEDULABLE),
    PluginRef(names.NODE_NAME),
    PluginRef(names.TAINT_TOLERATION, 3),
    PluginRef(names.NODE_AFFINITY, 2),
    PluginRef(names.NODE_PORTS),
    PluginRef(names.NODE_RESOURCES_FIT, 1),
    PluginRef(names.VOLUME_RESTRICTIONS),
    PluginRef(names.NODE_VOLUME_LIMITS),
    PluginRef(names.VOLUME_BINDING),
    PluginRef(names.POD_TOPOLOGY_SPREAD, 2),
    PluginRef(names.INTER_POD_AFFINITY, 2),
    PluginRef(names.DEFAULT_PREEMPTION),
    PluginRef(names.NODE_RESOURCES_BALANCED_ALLOCATION, 1),
    PluginRef(names.IMAGE_LOCALITY, 1),
    PluginRef(names.DEFAULT_BINDER),
))

_PLUGIN_SET_KEYS: Final = ("multiPoint", *EXTENSION_POINTS, *UNSUPPORTED_EXTENSION_POINTS)
_TOP_LEVEL_KEYS: Final = frozenset({
    "apiVersion", "kind", "parallelism", "leaderElection", "clientConnection", "healthzBindAddress",
    "metricsBindAddress", "enableProfiling", "enableContentionProfiling", "percentageOfNodesToScore",
    "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles", "extenders", "delayCacheUntilActive",
})
_PROFILE_KEYS: Final = frozenset({"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"})


class ConfigError(ValueError):
    """A configuration kube-scheduler would refuse, with the field path in the message."""


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    profiles: tuple[ProfileSpec, ...]
    #: The global percentage (0: adaptive); a profile's own value overrides it.
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0


def default_config() -> SchedulerConfig:
    """One ``default-scheduler`` profile with the default plugins."""
    return parse_config({"apiVersion": API_VERSION, "kind": KIND})


def load_config(path: str | Path) -> SchedulerConfig:
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ConfigError(f"unable to read config file {str(path)!r}: {err.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"config file {str(path)!r} is not valid YAML: {err}") from None
    return parse_config(data)


def parse_config(data: Any) -> SchedulerConfig:
    if not isinstance(data, Mapping):
        raise ConfigError("the configuration must be a YAML object")
    if data.get("apiVersion") != API_VERSION or data.get("kind") != KIND:
        raise ConfigError(f'no kind "{data.get("kind")}" is registered for version "{data.get("apiVersion")}": '
                          f"want apiVersion {API_VERSION} and kind {KIND}")
    _no_unknown(data, _TOP_LEVEL_KEYS, "")
    if data.get("extenders"):
        raise ConfigError("extenders: Forbidden: kubesim does not support scheduler extenders")
    percentage = _percentage(data.get("percentageOfNodesToScore"), "percentageOfNodesToScore") or 0
    initial = _positive_number(data.get("podInitialBackoffSeconds", 1), "podInitialBackoffSeconds")
    maximum = _positive_number(data.get("podMaxBackoffSeconds", 10), "podMaxBackoffSeconds")
    if maximum < initial:
        raise ConfigError(f"podMaxBackoffSeconds: Invalid value: {maximum}: must be greater than or equal to "
                          "podInitialBackoffSeconds")
    raw_profiles = data.get("profiles") or [{"schedulerName": DEFAULT_SCHEDULER_NAME}]
    if not isinstance(raw_profiles, list):
        raise ConfigError("profiles: must be a list")
    profiles = tuple(_profile(p, f"profiles[{i}]") for i, p in enumerate(raw_profiles))
    seen: set[str] = set()
    for i, profile in enumerate(profiles):
        if profile.scheduler_name in seen:
            raise ConfigError(f'profiles[{i}].schedulerName: Duplicate value: "{profile.scheduler_name}"')
        seen.add(profile.scheduler_name)
    queue_sorts = {_queue_sort(p) for p in profiles}
    if len(queue_sorts) > 1:
        raise ConfigError("profiles[1].plugins.queueSort: Invalid value: queueSort must be the same for all "
                          "profiles")
    return SchedulerConfig(profiles, percentage, initial, maximum)


def _profile(data: Any, path: str) -> ProfileSpec:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: must be an object")
    _no_unknown(data, _PROFILE_KEYS, path)
    name = data.get("schedulerName") or ""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{path}.schedulerName: Required value")
    plugins = _merged_plugins(data.get("plugins"), f"{path}.plugins")
    config: dict[str, Mapping[str, Any]] = {}
    for i, entry in enumerate(data.get("pluginConfig") or ()):
        entry_path = f"{path}.pluginConfig[{i}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise ConfigError(f"{entry_path}.name: Required value")
        if entry["name"] in config:
            raise ConfigError(f'{entry_path}.name: Duplicate value: "{entry["name"]}"')
        args = entry.get("args") or {}
        if not isinstance(args, Mapping):
            raise ConfigError(f"{entry_path}.args: must be an object")
        config[entry["name"]] = args
    percentage = _percentage(data.get("percentageOfNodesToScore"), f"{path}.percentageOfNodesToScore")
    return ProfileSpec(name, plugins, config, percentage)


def _merged_plugins(data: Any, path: str) -> dict[str, PluginSet]:
    if data is None:
        return {"multiPoint": DEFAULT_PLUGINS}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: must be an object")
    _no_unknown(data, frozenset(_PLUGIN_SET_KEYS), path)
    merged: dict[str, PluginSet] = {}
    for point in _PLUGIN_SET_KEYS:
        custom = _plugin_set(data.get(point), f"{path}.{point}")
        if point in UNSUPPORTED_EXTENSION_POINTS:
            if custom.enabled:
                raise ConfigError(f"{path}.{point}.enabled: Forbidden: kubesim has no {point} plugins")
            continue
        default = DEFAULT_PLUGINS if point == "multiPoint" else PluginSet()
        merged[point] = _merge(default, custom)
    return merged


def _merge(default: PluginSet, custom: PluginSet) -> PluginSet:
    """``mergePluginSet``: defaults minus the disabled, re-configured in place, custom extras appended."""
    by_name = {ref.name: i for i, ref in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in custom.disabled:
        for ref in default.enabled:
            if ref.name in custom.disabled:
                continue
            index = by_name.get(ref.name)
            if index is not None:
                ref = custom.enabled[index]
                replaced.add(index)
            enabled.append(ref)
    enabled.extend(ref for i, ref in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(tuple(enabled), tuple(dict.fromkeys((*custom.disabled, *default.disabled))))


def _plugin_set(data: Any, path: str) -> PluginSet:
    if data is None:
        return PluginSet()
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: must be an object with enabled and disabled")
    _no_unknown(data, frozenset({"enabled", "disabled"}), path)
    enabled: list[PluginRef] = []
    for i, item in enumerate(data.get("enabled") or ()):
        item_path = f"{path}.enabled[{i}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not item["name"]:
            raise ConfigError(f"{item_path}.name: Required value")
        weight = item.get("weight") or 0
        if not isinstance(weight, int) or isinstance(weight, bool) or weight < 0:
            raise ConfigError(f"{item_path}.weight: Invalid value: {weight!r}: must be a non-negative integer")
        enabled.append(PluginRef(item["name"], weight))
    disabled: list[str] = []
    for i, item in enumerate(data.get("disabled") or ()):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not item["name"]:
            raise ConfigError(f"{path}.disabled[{i}].name: Required value")
        disabled.append(item["name"])
    return PluginSet(tuple(enabled), tuple(disabled))


def _queue_sort(profile: ProfileSpec) -> tuple[str, ...]:
    explicit = profile.plugins.get("queueSort", PluginSet())
    if explicit.enabled:
        return tuple(ref.name for ref in explicit.enabled)
    return tuple(ref.name for ref in profile.plugins["multiPoint"].enabled if ref.name == names.PRIORITY_SORT)


def _no_unknown(data: Mapping[str, Any], allowed: frozenset[str], path: str) -> None:
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        where = f"{path}." if path else ""
        raise ConfigError(f'strict decoding error: unknown field "{where}{unknown[0]}"')


def _percentage(value: Any, path: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 100:
        raise ConfigError(f"{path}: Invalid value: {value!r}: not in valid range [0-100]")
    return value


def _positive_number(value: Any, path: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{path}: Invalid value: {value!r}: must be greater than 0")
    return float(value)
