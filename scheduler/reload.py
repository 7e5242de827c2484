"""The scheduler's configuration at run time: SIGHUP, and the ConfigMap ``kube-system/kubesim-scheduler-config``.

kube-scheduler reads its KubeSchedulerConfiguration once; studies change it
while a cluster runs (kube-scheduler-simulator restarts its scheduler for
that). kubesim's scheduler takes a new configuration between two scheduling
cycles, from two sources:

- the ``--config`` file, read again on SIGHUP;
- the ConfigMap ``kube-system/kubesim-scheduler-config``, key ``config.yaml``
  (``kubesim scheduler config set FILE`` writes it), watched: while it exists
  it takes precedence over the file; once deleted, the file (or the
  defaults) applies again.

Each new configuration is parsed and every profile built before it replaces
the running one; one that fails (bad YAML, an unknown plugin) is logged with
its reason and the scheduler keeps the configuration it had. What changed is
logged: profiles added or removed, plugins enabled or disabled per
extension point, Score weights, pluginConfig args, percentageOfNodesToScore
and the backoffs. ``/debug/config`` shows the configuration in use and where
it came from.

Concurrency: informer handlers and the signal handler run on the event loop
between cycles; :meth:`ConfigReloader.apply` is synchronous.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import yaml
from kubernetes.client import V1ConfigMap

from machinery.api.kinds import CONFIG_MAPS
from machinery.informer import DeletedFinalStateUnknown, InformerFactory
from scheduler.framework.runtime import Framework, FrameworkError
from scheduler.profile import ConfigError, SchedulerConfig, default_config, load_config, parse_config

log = logging.getLogger("scheduler.reload")

CONFIGMAP_NAMESPACE: Final = "kube-system"
CONFIGMAP_NAME: Final = "kubesim-scheduler-config"
CONFIGMAP_KEY: Final = "config.yaml"

SOURCE_DEFAULTS: Final = "defaults"


class Target(Protocol):
    """What the reloader drives (the :class:`~scheduler.scheduler.Scheduler`)."""

    @property
    def frameworks(self) -> Mapping[str, Framework]: ...

    @property
    def config(self) -> SchedulerConfig: ...

    def apply_config(self, config: SchedulerConfig) -> None: ...


@dataclass(frozen=True, slots=True)
class Loaded:
    config: SchedulerConfig
    source: str
    text: str


def parse_text(text: str, source: str) -> SchedulerConfig:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{source} is not valid YAML: {err}") from None
    return parse_config(data)


class ConfigReloader:
    """Keeps the scheduler on the configuration its sources say, logging every change."""

    def __init__(self, target: Target, *, path: str | None, initial_source: str | None = None) -> None:
        self._target = target
        self._path = path
        self._from_configmap: Loaded | None = None
        self.source = initial_source or (f"file {path}" if path else SOURCE_DEFAULTS)
        self.text = _read(path) if path else ""
        self.rejected = 0

    # --- sources -----------------------------------------------------------------------------------

    def watch_configmap(self, informers: InformerFactory) -> None:
        informer = informers.informer(CONFIG_MAPS, namespace=CONFIGMAP_NAMESPACE,
                                      field_selector=f"metadata.name={CONFIGMAP_NAME}")
        informer.add_handler(on_add=self._on_configmap, on_update=lambda _old, new: self._on_configmap(new),
                             on_delete=self._on_configmap_deleted)

    def reload_file(self) -> None:
        """SIGHUP: read the ``--config`` file again (the ConfigMap, while it exists, still takes precedence)."""
        log.info("received SIGHUP: reloading the configuration")
        if self._from_configmap is not None:
            log.info("ConfigMap %s/%s overrides the configuration file; delete it to use the file",
                     CONFIGMAP_NAMESPACE, CONFIGMAP_NAME)
            return
        self._apply_base()

    def _on_configmap(self, configmap: V1ConfigMap) -> None:
        text = (configmap.data or {}).get(CONFIGMAP_KEY)
        source = f"ConfigMap {CONFIGMAP_NAMESPACE}/{CONFIGMAP_NAME}"
        rv = configmap.metadata.resource_version if configmap.metadata else ""
        if text is None:
            self._reject(source, f'it has no "{CONFIGMAP_KEY}" key')
            return
        if self._from_configmap is not None and self._from_configmap.text == text:
            return
        try:
            config = parse_text(text, source)
        except ConfigError as err:
            self._reject(source, str(err))
            return
        if self.apply(config, f"{source} (resourceVersion {rv})", text):
            self._from_configmap = Loaded(config, source, text)

    def _on_configmap_deleted(self, _obj: V1ConfigMap | DeletedFinalStateUnknown[V1ConfigMap]) -> None:
        if self._from_configmap is None:
            return
        log.info("ConfigMap %s/%s was deleted: back to %s", CONFIGMAP_NAMESPACE, CONFIGMAP_NAME,
                 f"the file {self._path}" if self._path else "the default configuration")
        self._from_configmap = None
        self._apply_base()

    def _apply_base(self) -> None:
        if self._path:
            try:
                config = load_config(self._path)
            except ConfigError as err:
                self._reject(f"file {self._path}", str(err))
                return
            self.apply(config, f"file {self._path}", _read(self._path))
        else:
            self.apply(default_config(), SOURCE_DEFAULTS, "")

    # --- applying ----------------------------------------------------------------------------------

    def apply(self, config: SchedulerConfig, source: str, text: str) -> bool:
        """Swap to ``config`` if every profile builds; log what changed. Whether it was applied."""
        old_frameworks = dict(self._target.frameworks)
        old_config = self._target.config
        try:
            self._target.apply_config(config)
        except FrameworkError as err:
            self._reject(source, str(err))
            return False
        changes = describe_changes(old_config, old_frameworks, config, self._target.frameworks)
        self.source, self.text = source, text
        if changes:
            log.info("configuration from %s applied: %s", source, "; ".join(changes))
        else:
            log.info("configuration from %s applied: nothing changed", source)
        return True

    def _reject(self, source: str, why: str) -> None:
        self.rejected += 1
        log.warning("configuration from %s rejected, keeping the current one: %s", source, why)

    def document(self) -> dict[str, Any]:
        """``/debug/config``: where the configuration in use came from, and each profile's plugins."""
        config = self._target.config
        return {
            "source": self.source, "rejected": self.rejected,
            "percentageOfNodesToScore": config.percentage_of_nodes_to_score,
            "podInitialBackoffSeconds": config.pod_initial_backoff_seconds,
            "podMaxBackoffSeconds": config.pod_max_backoff_seconds,
            "profiles": {name: {"plugins": fwk.list_plugins(), "weights": dict(fwk.score_weights),
                                "percentageOfNodesToScore": fwk.percentage_of_nodes_to_score}
                         for name, fwk in self._target.frameworks.items()},
            "text": self.text,
        }


def describe_changes(old: SchedulerConfig, old_frameworks: Mapping[str, Framework], new: SchedulerConfig,
                     new_frameworks: Mapping[str, Framework]) -> list[str]:
    """What differs between two configurations, one phrase per change, in a stable order."""
    changes: list[str] = []
    for field_name, label in (("percentage_of_nodes_to_score", "percentageOfNodesToScore"),
                              ("pod_initial_backoff_seconds", "podInitialBackoffSeconds"),
                              ("pod_max_backoff_seconds", "podMaxBackoffSeconds")):
        before, after = getattr(old, field_name), getattr(new, field_name)
        if before != after:
            changes.append(f"{label} {before} -> {after}")
    for name in sorted(set(old_frameworks) - set(new_frameworks)):
        changes.append(f"profile {name} removed")
    for name in sorted(set(new_frameworks) - set(old_frameworks)):
        changes.append(f"profile {name} added")
    old_specs = {p.scheduler_name: p for p in old.profiles}
    new_specs = {p.scheduler_name: p for p in new.profiles}
    for name in sorted(set(old_frameworks) & set(new_frameworks)):
        before_fwk, after_fwk = old_frameworks[name], new_frameworks[name]
        before_points, after_points = before_fwk.list_plugins(), after_fwk.list_plugins()
        for point in after_points:
            was = [_bare(p) for p in before_points.get(point, [])]
            now = [_bare(p) for p in after_points[point]]
            enabled = [p for p in now if p not in was]
            disabled = [p for p in was if p not in now]
            if enabled:
                changes.append(f"profile {name}: {point} enabled {', '.join(enabled)}")
            if disabled:
                changes.append(f"profile {name}: {point} disabled {', '.join(disabled)}")
        for plugin in sorted(set(before_fwk.score_weights) & set(after_fwk.score_weights)):
            if before_fwk.score_weights[plugin] != after_fwk.score_weights[plugin]:
                changes.append(f"profile {name}: weight of {plugin} {before_fwk.score_weights[plugin]} -> "
                               f"{after_fwk.score_weights[plugin]}")
        before_args, after_args = old_specs[name].plugin_config, new_specs[name].plugin_config
        for plugin in sorted(set(before_args) | set(after_args)):
            if before_args.get(plugin) != after_args.get(plugin):
                changes.append(f"profile {name}: pluginConfig of {plugin} {_args(before_args.get(plugin))} -> "
                               f"{_args(after_args.get(plugin))}")
        if before_fwk.percentage_of_nodes_to_score != after_fwk.percentage_of_nodes_to_score:
            changes.append(f"profile {name}: percentageOfNodesToScore {before_fwk.percentage_of_nodes_to_score} "
                           f"-> {after_fwk.percentage_of_nodes_to_score}")
    return changes


def _bare(entry: str) -> str:
    """A plugin name without the ``(weight)`` that ``list_plugins`` adds to Score plugins."""
    return entry.split("(", 1)[0]


def _args(args: Mapping[str, Any] | None) -> str:
    if args is None:
        return "(none)"
    return yaml.safe_dump(dict(args), default_flow_style=True, sort_keys=True, width=1 << 30).strip()


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""
