"""pods/eviction: delete a Pod unless that would violate its PodDisruptionBudget.

This is kube-apiserver's ``EvictionREST`` (``pkg/registry/core/pod/storage/eviction.go``):

- a Pod that is Pending, finished or already being deleted goes at once, no
  budget consulted (it causes no new disruption);
- otherwise the PodDisruptionBudgets of its namespace whose (non-empty)
  selector matches its labels decide. More than one is a 500 Status;
  none lets the Pod go;
- a Pod that is not Ready does not count towards the budget's healthy Pods:
  it goes when the budget is healthy anyway (``currentHealthy >=
  desiredHealthy > 0``) or when the budget says ``unhealthyPodEvictionPolicy:
  AlwaysAllow``, guarded by the Pod's resourceVersion so that it cannot have
  become Ready meanwhile (a lost race is a 429);
- a Ready Pod needs ``status.disruptionsAllowed > 0`` of a budget whose
  status has caught up with its spec (``observedGeneration``); the budget is
  then decremented and the Pod recorded in ``status.disruptedPods`` (a write
  guarded by the budget's resourceVersion, retried on conflicts) before the
  Pod is deleted. Otherwise the answer is ``429 TooManyRequests`` with
  Kubernetes' message, which ``kubectl drain`` retries on.

Before it is deleted, a Pod that is not finished gets a ``DisruptionTarget``
condition saying why it goes (Kubernetes 1.31 and later).

The budgets are read by a consistent list (as kube-apiserver's eviction lists
them through its own client), then re-read from etcd when a guarded write
finds them changed, so concurrent evictions never spend one disruption twice.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Final

from starlette.responses import Response

from apiserver import errors
from apiserver.endpoints import body
from apiserver.endpoints.responses import json_response
from apiserver.errors import APIError
from apiserver.registry.policy import poddisruptionbudgets
from apiserver.registry.resource import Subresource
from apiserver.registry.store import DeleteOptions, Store, WriteOptions
from apiserver.registry.strategy import Obj, Strategy
from apiserver.storage.objects import Entry
from machinery.api import kinds
from machinery.api.labels import Selector, SelectorError
from machinery.api.meta import now_time

if TYPE_CHECKING:
    from apiserver.endpoints.request import Call

#: Evictions approved but not yet seen by the disruption controller beyond which a budget refuses more.
MAX_DISRUPTED_POD_SIZE: Final = 2000
#: Attempts at a guarded write that loses races (Kubernetes' EvictionsRetry has 20 steps).
_ATTEMPTS: Final = 20
VIOLATION: Final = "Cannot evict pod as it would violate the pod's disruption budget."
_TERMINAL: Final = ("Succeeded", "Failed")
#: The cause type of a budget's refusal (``policyv1.DisruptionBudgetCause``).
DISRUPTION_BUDGET_CAUSE: Final = "DisruptionBudget"


def too_many_requests(message: str, retry_after: int, cause: str) -> APIError:
    """``NewTooManyRequests`` with a DisruptionBudget cause; ``Retry-After`` only when there is a delay."""
    details: dict[str, Any] = {"causes": [{"reason": DISRUPTION_BUDGET_CAUSE, "message": cause}]}
    headers = None
    if retry_after > 0:
        details["retryAfterSeconds"] = retry_after
        headers = {"Retry-After": str(retry_after)}
    return APIError(429, "TooManyRequests", message, details, headers=headers)


def _still_processing(pdb_name: str) -> APIError:
    return too_many_requests(VIOLATION, 10, f"The disruption budget {pdb_name} is still being processed by the "
                                            "server.")


def _pdb_forbidden(pdb_name: str, why: str) -> APIError:
    return APIError(403, "Forbidden", f'poddisruptionbudget.policy "{pdb_name}" is forbidden: {why}',
                    {"name": pdb_name, "group": "policy", "kind": "poddisruptionbudget"})


def can_ignore_pdb(pod: Obj) -> bool:
    """A Pod whose eviction disrupts nothing new: finished, never started, or already going."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in (*_TERMINAL, "Pending") or bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def _enforce_resource_version(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in _TERMINAL and not (pod.get("metadata") or {}).get("deletionTimestamp")


def is_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())


def matching_budgets(budgets: list[Entry], pod: Obj) -> list[Entry]:
    """The budgets of the Pod's namespace that select it; a budget selecting nothing or everything never does."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    out = []
    for entry in budgets:
        pdb = entry.obj
        if (pdb.get("metadata") or {}).get("namespace") != meta.get("namespace"):
            continue
        try:
            selector = Selector.from_label_selector((pdb.get("spec") or {}).get("selector"))
        except SelectorError:
            continue
        if selector.empty() or not selector.matches(labels):
            continue
        out.append(entry)
    return out


def _set_disruption_allowed_condition(status: Obj) -> None:
    """``UpdateDisruptionAllowedCondition``, as the eviction does when the last disruption is spent."""
    allowed = int(status.get("disruptionsAllowed") or 0) > 0
    wanted = {"type": "DisruptionAllowed", "status": "True" if allowed else "False",
              "reason": "SufficientPods" if allowed else "InsufficientPods", "message": "",
              "observedGeneration": status.get("observedGeneration") or 0}
    conditions = list(status.get("conditions") or [])
    for i, cond in enumerate(conditions):
        if cond.get("type") == "DisruptionAllowed":
            same = cond.get("status") == wanted["status"]
            wanted["lastTransitionTime"] = cond.get("lastTransitionTime") if same else now_time()
            conditions[i] = {**cond, **wanted}
            break
    else:
        conditions.append({**wanted, "lastTransitionTime": now_time()})
    status["conditions"] = conditions


class EvictionREST(Subresource):
    """``pods/<name>/eviction`` (POST an ``Eviction``)."""

    def __init__(self, pod_status: Strategy) -> None:
        #: The Pod's status strategy, through which the DisruptionTarget condition is written.
        self.pod_status = pod_status

    async def create(self, call: Call) -> Response:
        assert call.name is not None
        opts = body.write_options(call)
        eviction = await body.decode_object(call, opts, kind="Eviction", api_version="policy/v1")
        if (eviction.get("metadata") or {}).get("name") not in (None, "", call.name):
            raise errors.bad_request("name in URL does not match name in Eviction object")
        options = DeleteOptions()
        body.apply_delete_options(options, eviction.get("deleteOptions") or {})
        options.dry_run = options.dry_run or opts.dry_run
        failure = await self.evict(call, call.namespace or "", call.name, options, opts)
        if failure is not None:
            return json_response(failure, failure["code"])
        return json_response(errors.success_status(code=201), 201)

    async def evict(self, call: Call, namespace: str, name: str, options: DeleteOptions,
                    opts: WriteOptions) -> dict[str, Any] | None:
        """Evict the Pod, or raise why not; a Status to answer instead of success (several budgets)."""
        pods = call.server.store(kinds.PODS)
        client_rv = options.precondition_rv
        pod: Obj = {}
        for attempt in range(_ATTEMPTS):
            pod = (await pods.get(namespace, name)).obj
            if not can_ignore_pdb(pod):
                break
            delete = copy.copy(options)
            if _enforce_resource_version(pod) and not client_rv:
                # Guard against a race with whatever else changes the Pod's disruption state.
                delete.precondition_rv = (pod.get("metadata") or {}).get("resourceVersion")
            try:
                await self._mark_and_delete(call, pods, namespace, name, delete, opts)
                return None
            except APIError as e:
                if e.reason != "Conflict" or client_rv or attempt == _ATTEMPTS - 1:
                    raise

        # A consistent list, as the eviction's own client lists the budgets in kube-apiserver: a budget's
        # status written a moment ago (by the disruption controller) is what decides.
        budget_store = call.server.store(kinds.POD_DISRUPTION_BUDGETS)
        listed = await budget_store.list(budget_store.namespace_filter(namespace))
        budgets = matching_budgets(listed.entries, pod)
        if len(budgets) > 1:
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                               "does not support.", "code": 500}
        guard_pod = False
        pdb_name = ""
        if budgets:
            pdb = budgets[0].obj
            pdb_name = pdb["metadata"]["name"]
            spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
            current, desired = int(status.get("currentHealthy") or 0), int(status.get("desiredHealthy") or 0)
            if not is_ready(pod) and (spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow"
                                      or (current >= desired > 0)):
                # An unhealthy Pod does not count towards the budget: it may go, if it stays unready.
                guard_pod = True
            else:
                await self._check_and_decrement(call, namespace, budgets[0], name, dry_run=options.dry_run)

        delete = copy.copy(options)
        if guard_pod:
            delete.precondition_rv = (pod.get("metadata") or {}).get("resourceVersion")
        try:
            await self._mark_and_delete(call, pods, namespace, name, delete, opts)
        except APIError as e:
            if e.reason == "Conflict" and guard_pod and not client_rv:
                raise _still_processing(pdb_name) from e
            raise
        return None

    async def _check_and_decrement(self, call: Call, namespace: str, listed: Entry, pod_name: str, *,
                                   dry_run: bool) -> None:
        """Spend one of the budget's allowed disruptions on this Pod, or raise why not (429, 403)."""
        store = call.server.store(kinds.POD_DISRUPTION_BUDGETS)
        pdb_name = listed.obj["metadata"]["name"]
        entry: Entry | None = listed
        for _ in range(_ATTEMPTS):
            if entry is None:
                entry = await store.get(namespace, pdb_name)
            pdb = entry.obj
            meta, status = pdb.get("metadata") or {}, pdb.get("status") or {}
            if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 0):
                raise _still_processing(pdb_name)
            allowed = int(status.get("disruptionsAllowed") or 0)
            if allowed < 0:
                raise _pdb_forbidden(pdb_name, "pdb disruptions allowed is negative")
            if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
                raise _pdb_forbidden(pdb_name, "DisruptedPods map too big - too many evictions not confirmed by "
                                               "PDB controller")
            if allowed == 0:
                raise too_many_requests(
                    VIOLATION, 0, f"The disruption budget {pdb_name} needs {int(status.get('desiredHealthy') or 0)} "
                                  f"healthy pods and has {int(status.get('currentHealthy') or 0)} currently")
            if dry_run:
                return
            seen_rv = str(entry.rv)

            def spend(obj: Obj, _current: Entry) -> Obj:
                new_status = obj.setdefault("status", {})
                new_status["disruptionsAllowed"] = int(new_status.get("disruptionsAllowed") or 0) - 1
                if new_status["disruptionsAllowed"] == 0:
                    _set_disruption_allowed_condition(new_status)
                disrupted = dict(new_status.get("disruptedPods") or {})
                disrupted[pod_name] = now_time()
                new_status["disruptedPods"] = disrupted
                return obj

            def expected(_new: Obj, rv: str = seen_rv) -> str:
                return rv

            status_store = store.using(poddisruptionbudgets.STATUS_STRATEGY)
            try:
                await status_store.update_with(namespace, pdb_name, spend,
                                               WriteOptions(field_manager="kube-apiserver", subresource="status"),
                                               expect_rv=expected)
                return
            except APIError as e:
                if e.reason != "Conflict":
                    raise
                entry = None  # changed meanwhile: read it again and decide again
        raise errors.timeout(f'couldn\'t update PodDisruptionBudget "{pdb_name}" due to conflicts', 10)

    async def _mark_and_delete(self, call: Call, pods: Store, namespace: str, name: str, options: DeleteOptions,
                               opts: WriteOptions) -> None:
        """``addConditionAndDeletePod``: the DisruptionTarget condition, then the delete."""
        if not options.dry_run:
            wanted_rv = options.precondition_rv

            def mark(pod: Obj, _current: Entry) -> Obj:
                status = pod.setdefault("status", {})
                if status.get("phase") in _TERMINAL or (pod.get("metadata") or {}).get("deletionTimestamp"):
                    return pod
                conditions = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
                conditions.append({"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                                   "message": "Eviction API: evicting", "lastTransitionTime": now_time()})
                status["conditions"] = conditions
                return pod

            if options.precondition_uid:
                current = await pods.get(namespace, name)
                if (current.obj.get("metadata") or {}).get("uid") != options.precondition_uid:
                    raise errors.conflict(kinds.PODS, name, f"Precondition failed: UID in precondition: "
                                          f"{options.precondition_uid}, UID in object meta: "
                                          f"{(current.obj.get('metadata') or {}).get('uid')}")
            entry, _ = await pods.using(self.pod_status).update_with(
                namespace, name, mark, WriteOptions(field_manager=opts.field_manager, subresource="status"),
                expect_rv=(lambda _new: wanted_rv) if wanted_rv else None)
            if wanted_rv:
                # The condition is this eviction's own write: the delete is guarded by it now.
                options = copy.copy(options)
                options.precondition_rv = str(entry.rv)
        await pods.delete(namespace, name, options, admission=call.admission(dry_run=options.dry_run,
                                                                             subresource=""))
