"""The HorizontalPodAutoscaler controller (autoscaling/v2): replicas follow the Pods' resource usage.

Kubernetes' ``pkg/controller/podautoscaler``, every
``--horizontal-pod-autoscaler-sync-period`` (15 s) for each HPA:

- the target's ``/scale`` (a Deployment, ReplicaSet, StatefulSet, RC, or any
  resource with a scale subresource, custom ones included through
  discovery) gives the current replicas and the Pods' selector;
- each ``Resource`` metric is read from ``metrics.k8s.io`` (the Pods' usage,
  against their requests for ``Utilization`` targets): the usage ratio is
  ``current / target``, ignored within the tolerance (0.1), else the
  proposal is ``ceil(ratio * Pods with metrics)``; the largest proposal over
  the metrics wins;
- ``behavior``: scale-up and scale-down policies (by default up by 100% or
  4 Pods per 15 s, whichever is more; down by 100% per 15 s) and stabilization
  windows (down: the highest recommendation of the last 300 s), then
  ``minReplicas`` / ``maxReplicas``;
- the new size is written through ``/scale`` (``SuccessfulRescale``:
  "New size: 4; reason: cpu resource utilization (percentage of request)
  above target"), and the status: ``currentReplicas``, ``desiredReplicas``,
  ``currentMetrics``, ``lastScaleTime`` and the AbleToScale, ScalingActive and
  ScalingLimited conditions.

Until the metrics API is served (kubelet_sim's metrics arrive with the
metrics server), an HPA reports ``ScalingActive: False``
(FailedGetResourceMetric) with Kubernetes' message, and changes nothing. Pods
and Object/External metrics need a custom metrics API kubesim does not have:
they fail the same way.

Concurrency: ``concurrent_horizontal_pod_autoscaler_syncs`` workers keyed by
HPA; recommendations are kept in memory per HPA, as Kubernetes keeps them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubernetes.client import V1Scale, V2HorizontalPodAutoscaler

from controller_manager.context import ControllerContext
from controller_manager.podutil import is_pod_ready
from machinery import discovery
from machinery.api import kinds
from machinery.api.kinds import HORIZONTAL_POD_AUTOSCALERS, PODS, ObjectKey, ResourceInfo
from machinery.api.labels import Selector
from machinery.api.meta import format_time, parse_time, utcnow
from machinery.api.quantity import format_quantity, milli_value
from machinery.client.errors import ApiError, NotFound
from machinery.client.objects import key_of, meta_of, to_wire
from machinery.controller import Controller
from machinery.events import NORMAL, WARNING
from machinery.informer.store import NAMESPACE_INDEX, index_by_namespace

log = logging.getLogger(__name__)

NAME: Final = "horizontal-pod-autoscaler-controller"
ALIASES: Final = ("horizontalpodautoscaling",)
EVENT_SOURCE: Final = "horizontal-pod-autoscaler"
METRICS_API: Final = "/apis/metrics.k8s.io/v1beta1"
_NO_METRICS_API: Final = ("the server could not find the requested resource (get pods.metrics.k8s.io)")
_DEFAULT_UP: Final = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                      "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15},
                                   {"type": "Pods", "value": 4, "periodSeconds": 15}]}
_DEFAULT_DOWN: Final = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


class MetricsError(Exception):
    """A metric could not be computed: (condition reason, event reason, message)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class HorizontalController(Controller):
    def __init__(self, ctx: ControllerContext) -> None:
        self._hpas = ctx.informers.informer(HORIZONTAL_POD_AUTOSCALERS)
        self._pods = ctx.informers.informer(PODS, indexers={NAMESPACE_INDEX: index_by_namespace})
        super().__init__("horizontalpodautoscaler", informers=[self._hpas, self._pods],
                         workers=ctx.options.concurrent_horizontal_pod_autoscaler_syncs, clock=ctx.clock)
        self._client = ctx.client
        self._recorder = ctx.events.recorder(EVENT_SOURCE)
        self._is_leading = ctx.is_leading
        self._period = ctx.options.horizontal_pod_autoscaler_sync_period
        self._tolerance = ctx.options.horizontal_pod_autoscaler_tolerance
        self._downscale_window = ctx.options.horizontal_pod_autoscaler_downscale_stabilization
        #: (time, recommendation) per HPA, for the stabilization windows.
        self._recommendations: dict[str, list[tuple[dt.datetime, int]]] = {}
        #: (time, replicas added or removed) per HPA, for the behavior policies' periods.
        self._scale_events: dict[str, list[tuple[dt.datetime, int]]] = {}
        self._hpas.add_handler(on_add=self.enqueue, on_update=lambda _o, n: self.enqueue(n),
                               on_delete=self._deleted)

    def _deleted(self, obj: Any) -> None:
        hpa = obj.obj if hasattr(obj, "obj") and hasattr(obj, "key") else obj
        self._recommendations.pop(key_of(hpa), None)
        self._scale_events.pop(key_of(hpa), None)

    async def sync(self, key: ObjectKey) -> None:
        hpa = self._hpas.store.get(key)
        if hpa is None or not self._is_leading():
            return
        try:
            await self._reconcile(hpa)
        finally:
            self.queue.add_after(key, self._period)

    async def _reconcile(self, hpa: V2HorizontalPodAutoscaler) -> None:
        now = utcnow()
        spec: Any = hpa.spec
        ref = spec.scale_target_ref
        namespace = meta_of(hpa).namespace or ""
        status = to_wire(hpa.status) if hpa.status is not None else {}
        conditions: list[dict[str, Any]] = list(status.get("conditions") or ())
        target = await self._resource_for(ref.api_version or "", ref.kind)
        reference = f"{ref.kind}/{ref.name}"
        if target is None:
            message = f"the HPA controller was unable to get the target's current scale: no matches for kind " \
                      f'"{ref.kind}" in group "{(ref.api_version or "").rpartition("/")[0]}"'
            return await self._failed(hpa, conditions, "AbleToScale", "FailedGetScale", message, status, now)
        scale_resource = dataclasses.replace(target, model_ref=V1Scale)
        try:
            scale = V1Scale.model_validate(await self._client.get_path(
                target.path(namespace, ref.name, "scale"), resource=target))
        except ApiError as err:
            return await self._failed(hpa, conditions, "AbleToScale", "FailedGetScale",
                                      f"the HPA controller was unable to get the target's current scale: {err}",
                                      status, now)
        current = (scale.spec.replicas if scale.spec is not None else None) or 0
        _set(conditions, "AbleToScale", "True", "SucceededGetScale",
             "the HPA controller was able to get the target's current scale", now)
        min_replicas = spec.min_replicas if spec.min_replicas is not None else 1
        status["currentReplicas"] = current
        if current == 0 and min_replicas != 0:
            _set(conditions, "ScalingActive", "False", "ScalingDisabled",
                 "scaling is disabled since the replica count of the target is zero", now)
            status.update(desiredReplicas=0, conditions=conditions)
            return await self._write(hpa, status)
        selector_text = scale.status.selector if scale.status is not None else None
        selector = Selector.parse(selector_text) if selector_text else Selector.nothing()
        try:
            proposal, metric_name, metrics = await self._compute(hpa, namespace, selector, current)
        except MetricsError as err:
            self._recorder.event(hpa, WARNING, err.reason, str(err))
            self._recorder.event(hpa, WARNING, "FailedComputeMetricsReplicas",
                                 f"invalid metrics (1 invalid out of {len(spec.metrics or [1])}), first error is: "
                                 f"{err}")
            _set(conditions, "ScalingActive", "False", err.reason,
                 f"the HPA was unable to compute the replica count: {err}", now)
            status.update(desiredReplicas=status.get("desiredReplicas", current), conditions=conditions)
            return await self._write(hpa, status)
        _set(conditions, "ScalingActive", "True", "ValidMetricFound",
             f"the HPA was able to successfully calculate a replica count from {metric_name}", now)
        desired, limit_reason = self._normalize(hpa, current, proposal, now)
        if desired > current:
            reason = f"{metric_name} above target"
        elif desired < current:
            reason = "All metrics below target"
        else:
            reason = ""
        status["currentMetrics"] = metrics
        status["desiredReplicas"] = desired
        if desired != current:
            body = to_wire(scale)
            body["spec"] = {"replicas": desired}
            try:
                await self._client.update(scale_resource, body, subresource="scale")
            except ApiError as err:
                self._recorder.event(hpa, WARNING, "FailedRescale", f"New size: {desired}; reason: {reason}; "
                                                                    f"error: {err}")
                _set(conditions, "AbleToScale", "False", "FailedUpdateScale",
                     f"the HPA controller was unable to update the target scale: {err}", now)
                status["conditions"] = conditions
                return await self._write(hpa, status)
            self._scale_events.setdefault(key_of(hpa), []).append((now, desired - current))
            self._recorder.event(hpa, NORMAL, "SuccessfulRescale", f"New size: {desired}; reason: {reason}")
            log.info("hpa %s: scaled %s from %d to %d (%s)", key_of(hpa), reference, current, desired, reason)
            status["lastScaleTime"] = format_time(now)
            _set(conditions, "AbleToScale", "True", "SucceededRescale",
                 f"the HPA controller was able to update the target scale to {desired}", now)
        else:
            _set(conditions, "AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size",
                 now)
        if limit_reason == "TooFewReplicas":
            _set(conditions, "ScalingLimited", "True", "TooFewReplicas",
                 "the desired replica count is less than the minimum replica count", now)
        elif limit_reason == "TooManyReplicas":
            _set(conditions, "ScalingLimited", "True", "TooManyReplicas",
                 "the desired replica count is more than the maximum replica count", now)
        elif limit_reason:
            _set(conditions, "ScalingLimited", "True", limit_reason, "the desired replica count is limited by "
                 "the scaling policies", now)
        else:
            _set(conditions, "ScalingLimited", "False", "DesiredWithinRange",
                 "the desired count is within the acceptable range", now)
        status["conditions"] = conditions
        await self._write(hpa, status)

    async def _resource_for(self, api_version: str, kind: str) -> ResourceInfo[Any] | None:
        found = kinds.for_kind(api_version, kind)
        if found is not None and found.subresource("scale") is not None:
            return found
        try:
            listing = await discovery.discover(self._client)
        except ApiError:
            return None
        return listing.by_kind().get((api_version, kind))

    async def _compute(self, hpa: V2HorizontalPodAutoscaler, namespace: str, selector: Selector, current: int,
                       ) -> tuple[int, str, list[dict[str, Any]]]:
        """The largest proposal over the metrics, the metric that made it, and ``currentMetrics``."""
        specs = list((hpa.spec.metrics if hpa.spec is not None else None) or ())
        if not specs:
            # autoscaling/v2's default: 80% CPU.
            specs_wire: list[dict[str, Any]] = [{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
        else:
            specs_wire = [to_wire(m) for m in specs]
        pods = [p for p in self._pods.store.by_index(NAMESPACE_INDEX, namespace)
                if selector.matches(meta_of(p).labels or {}) and meta_of(p).deletion_timestamp is None
                and (p.status is None or p.status.phase not in ("Failed", "Succeeded"))]
        best, best_name = -1, ""
        current_metrics: list[dict[str, Any]] = []
        for metric in specs_wire:
            if metric.get("type") != "Resource":
                kind = metric.get("type", "")
                raise MetricsError(f"FailedGet{kind}Metric", f"unable to get {kind.lower()} metric: kubesim serves "
                                   "no custom or external metrics API")
            resource = metric.get("resource") or {}
            name = resource.get("name", "")
            usage = await self._usage(namespace, selector, name)
            proposal, observed = self._resource_proposal(resource, name, pods, usage, current)
            current_metrics.append({"type": "Resource", "resource": {"name": name, "current": observed}})
            label = (f"{name} resource utilization (percentage of request)"
                     if (resource.get("target") or {}).get("type") == "Utilization" else f"{name} resource")
            if proposal > best:
                best, best_name = proposal, label
        return best, best_name, current_metrics

    async def _usage(self, namespace: str, selector: Selector, resource: str) -> dict[str, int]:
        """Each Pod's usage of ``resource`` (milli-units) from ``metrics.k8s.io``."""
        try:
            listing = await self._client.get_path(f"{METRICS_API}/namespaces/{namespace}/pods",
                                                  params={"labelSelector": str(selector)})
        except NotFound:
            raise MetricsError("FailedGetResourceMetric", f"failed to get {resource} utilization: unable to get "
                               f"metrics for resource {resource}: unable to fetch metrics from resource metrics "
                               f"API: {_NO_METRICS_API}") from None
        except ApiError as err:
            raise MetricsError("FailedGetResourceMetric", f"failed to get {resource} utilization: unable to get "
                               f"metrics for resource {resource}: unable to fetch metrics from resource metrics "
                               f"API: {err}") from None
        usage: dict[str, int] = {}
        for item in listing.get("items") or ():
            total = sum(milli_value((c.get("usage") or {}).get(resource, "0")) for c in item.get("containers") or ())
            usage[(item.get("metadata") or {}).get("name", "")] = total
        if not usage:
            raise MetricsError("FailedGetResourceMetric", f"failed to get {resource} utilization: unable to get "
                               f"metrics for resource {resource}: no metrics returned from resource metrics API")
        return usage

    def _resource_proposal(self, source: Mapping[str, Any], resource: str, pods: Sequence[Any],
                           usage: Mapping[str, int], current: int) -> tuple[int, dict[str, Any]]:
        """``GetResourceReplicas``: a replica count from the Pods' usage, missing and unready Pods accounted."""
        target = source.get("target") or {}
        ready = [p for p in pods if meta_of(p).name in usage and is_pod_ready(p)]
        missing = [p for p in pods if meta_of(p).name not in usage]
        if target.get("type") == "Utilization":
            requests = {meta_of(p).name: sum(milli_value(((c.resources.requests if c.resources else None) or {})
                                                         .get(resource, "0")) for c in p.spec.containers or ())
                        for p in pods if p.spec is not None}
            with_metrics: list[str] = [meta_of(p).name or "" for p in ready]
            total_request = sum(requests.get(n, 0) for n in with_metrics)
            if total_request == 0:
                raise MetricsError("FailedGetResourceMetric", f"failed to get {resource} utilization: missing "
                                   f"request for {resource}")
            used: int = sum(usage.get(n, 0) for n in with_metrics)
            utilization = 100 * used / total_request
            goal = target.get("averageUtilization") or 80
            ratio = utilization / goal
            observed = {"averageUtilization": int(utilization),
                        "averageValue": format_quantity(used // max(len(with_metrics), 1), resource)}
        else:
            goal = milli_value(target.get("averageValue") or "0")
            if goal == 0:
                raise MetricsError("FailedGetResourceMetric", f"invalid target for {resource}")
            average = sum(usage.get(meta_of(p).name or "", 0) for p in ready) / max(len(ready), 1)
            ratio = average / goal
            observed = {"averageValue": format_quantity(int(average), resource)}
        if not ready:
            return current, observed
        # Pods without metrics count as using 0 when scaling up, the target when scaling down.
        if missing:
            if ratio > 1:
                ratio = ratio * len(ready) / (len(ready) + len(missing))
            else:
                ratio = (ratio * len(ready) + len(missing)) / (len(ready) + len(missing))
        if abs(ratio - 1.0) <= self._tolerance:
            return current, observed
        return math.ceil(ratio * (len(ready) + len(missing))), observed

    def _normalize(self, hpa: V2HorizontalPodAutoscaler, current: int, proposal: int,
                   now: dt.datetime) -> tuple[int, str]:
        """Stabilization windows, behavior policies, then min/max (``normalizeDesiredReplicasWithBehaviors``)."""
        key = key_of(hpa)
        spec: Any = hpa.spec
        behavior = to_wire(spec.behavior) if spec.behavior is not None else {}
        up = {**_DEFAULT_UP, **(behavior.get("scaleUp") or {})}
        down = {**_DEFAULT_DOWN, "stabilizationWindowSeconds": int(self._downscale_window),
                **(behavior.get("scaleDown") or {})}
        history = self._recommendations.setdefault(key, [])
        history.append((now, proposal))
        longest = max(up.get("stabilizationWindowSeconds") or 0, down.get("stabilizationWindowSeconds") or 0)
        history[:] = [(t, r) for t, r in history if (now - t).total_seconds() <= max(longest, 1)]
        up_window = [r for t, r in history if (now - t).total_seconds() <= (up.get("stabilizationWindowSeconds") or 0)]
        down_window = [r for t, r in history
                       if (now - t).total_seconds() <= (down.get("stabilizationWindowSeconds") or 0)]
        stabilized = current
        if proposal > current:
            stabilized = min([proposal, *up_window]) if up_window else proposal
            stabilized = max(stabilized, current)
        elif proposal < current:
            stabilized = max([proposal, *down_window]) if down_window else proposal
            stabilized = min(stabilized, current)
        reason = ""
        if stabilized > current:
            allowed = self._policy_limit(key, up, current, now, up=True)
            if stabilized > allowed:
                stabilized, reason = allowed, "ScaleUpLimit"
        elif stabilized < current:
            allowed = self._policy_limit(key, down, current, now, up=False)
            if stabilized < allowed:
                stabilized, reason = allowed, "ScaleDownLimit"
        min_replicas = spec.min_replicas if spec.min_replicas is not None else 1
        if stabilized < min_replicas:
            return min_replicas, "TooFewReplicas"
        if stabilized > spec.max_replicas:
            return spec.max_replicas, "TooManyReplicas"
        return stabilized, reason

    def _policy_limit(self, key: str, rules: Mapping[str, Any], current: int, now: dt.datetime, *, up: bool) -> int:
        """The furthest the policies let the replicas go now, given the changes of their periods."""
        if rules.get("selectPolicy") == "Disabled":
            return current
        events = self._scale_events.get(key, [])
        limits = []
        for policy in rules.get("policies") or ():
            period = policy.get("periodSeconds") or 15
            changed = sum(d for t, d in events if (now - t).total_seconds() <= period and (d > 0) == up)
            start = current - changed
            if policy.get("type") == "Percent":
                step = math.ceil(start * policy.get("value", 0) / 100) if up else \
                    math.floor(start * policy.get("value", 0) / 100)
            else:
                step = policy.get("value", 0)
            limits.append(start + step if up else start - step)
        if not limits:
            return current
        pick = max if (rules.get("selectPolicy") or "Max") == "Max" else min
        result: int = pick(limits) if up else (min if pick is max else max)(limits)
        return max(result, current) if up else min(result, current)

    async def _failed(self, hpa: V2HorizontalPodAutoscaler, conditions: list[dict[str, Any]], ctype: str,
                      reason: str, message: str, status: dict[str, Any], now: dt.datetime) -> None:
        self._recorder.event(hpa, WARNING, reason, message)
        _set(conditions, ctype, "False", reason, message, now)
        status.setdefault("currentReplicas", 0)
        status.setdefault("desiredReplicas", 0)
        status["conditions"] = conditions
        await self._write(hpa, status)

    async def _write(self, hpa: V2HorizontalPodAutoscaler, status: dict[str, Any]) -> None:
        status["observedGeneration"] = meta_of(hpa).generation
        current = to_wire(hpa.status) if hpa.status is not None else {}
        if _comparable(current) == _comparable(status):
            return
        body = to_wire(hpa)
        body["status"] = status
        try:
            await self._client.update_status(HORIZONTAL_POD_AUTOSCALERS, body)
        except NotFound:
            pass


def _set(conditions: list[dict[str, Any]], ctype: str, status: str, reason: str, message: str,
         now: dt.datetime) -> None:
    current = next((c for c in conditions if c.get("type") == ctype), None)
    if current is None:
        conditions.append({"type": ctype, "status": status, "lastTransitionTime": format_time(now),
                           "reason": reason, "message": message})
        return
    if current.get("status") != status:
        current["lastTransitionTime"] = format_time(now)
    current.update(status=status, reason=reason, message=message)


def _comparable(status: Mapping[str, Any]) -> dict[str, Any]:
    result = dict(status)
    result["conditions"] = [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                            for c in status.get("conditions") or ()]
    return result


__all__ = ["ALIASES", "NAME", "HorizontalController", "parse_time"]
