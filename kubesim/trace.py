"""``kubesim trace NAMESPACE/POD``: the 13 steps that brought one Pod to life, rebuilt from the API.

Nothing here is kubesim-internal: the trace is read the way a user could read
it from any cluster.

- resourceVersions come from the watch history the APIServer still holds: a
  watch on one object from the oldest revision its watch cache keeps replays
  every change of that object (created, bound, running), each with the
  revision it was written at;
- times come from the Events the components wrote (``eventTime``, to the
  microsecond: SuccessfulCreate by the controller-manager, Scheduled by the
  scheduler, Pulling...Started by the kubelet), from the Pod's conditions and
  from the creation timestamps (whole seconds, as Kubernetes keeps them);
- step 1 comes from the Leases the components hold (the leader election
  Leases of the scheduler and controller-manager, the node's Lease).

A step that has not happened yet is shown as waiting, with the scheduler's
reason when it has one. ``--json`` prints the same steps for programs.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from kubesim.kubeconfig import find_config
from machinery.api.meta import parse_time
from machinery.client.config import ConfigError

_TOO_OLD = re.compile(r"too old resource version: \d+ \((\d+)\)")


@dataclass
class Step:
    step: int
    component: str
    what: str
    time: str | None = None          # RFC 3339, when known
    seconds: float | None = None     # since step 2
    resource_version: str | None = None
    done: bool = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pod", metavar="NAMESPACE/POD", help="the Pod to trace, e.g. default/web-x7k2p")
    p.add_argument("--json", action="store_true", help="print the steps as JSON")
    p.add_argument("--server", help="the APIServer URL (default: $KUBECONFIG, else <data-dir>/kubeconfig)")
    p.add_argument("--data-dir", type=Path, default=Path(".kubesim"), help="kubesim up's data dir (default .kubesim)")


# --- reading the API ------------------------------------------------------------------------

def _get(api: httpx.Client, path: str, **params: str) -> dict[str, Any] | None:
    r = api.get(path, params=params)
    if r.status_code == 404:
        return None
    r.raise_for_status()
    body: dict[str, Any] = r.json()
    return body


def history(api: httpx.Client, collection: str, name: str, until_rv: int) -> list[tuple[str, int, dict[str, Any]]]:
    """Every change of one object still in the APIServer's watch window: (type, revision, object)."""
    params = {"watch": "true", "fieldSelector": f"metadata.name={name}", "timeoutSeconds": "3"}
    start = "1"
    for _ in range(2):
        events: list[tuple[str, int, dict[str, Any]]] = []
        deadline = time.monotonic() + 3
        with api.stream("GET", collection, params={**params, "resourceVersion": start}) as resp:
            for line in resp.iter_lines():
                if not line.strip():
                    continue
                ev = json.loads(line)
                obj = ev.get("object") or {}
                if ev.get("type") == "ERROR":
                    m = _TOO_OLD.search(obj.get("message", ""))
                    if m is None:
                        return []
                    start = str(int(m.group(1)) - 1)
                    break
                rv = int((obj.get("metadata") or {}).get("resourceVersion") or 0)
                events.append((ev["type"], rv, obj))
                if rv >= until_rv or time.monotonic() > deadline:
                    return events
            else:
                return events
    return []


def _events(api: httpx.Client, namespace: str, uid: str) -> list[dict[str, Any]]:
    body = _get(api, f"/api/v1/namespaces/{namespace}/events", fieldSelector=f"involvedObject.uid={uid}")
    items: list[dict[str, Any]] = (body or {}).get("items") or []
    return sorted(items, key=_event_time)


def _event_time(ev: dict[str, Any]) -> str:
    return str(ev.get("eventTime") or ev.get("firstTimestamp") or "")


# --- building the trace ----------------------------------------------------------------------

def build(api: httpx.Client, namespace: str, name: str) -> tuple[list[Step], str]:
    pod = _get(api, f"/api/v1/namespaces/{namespace}/pods/{name}")
    if pod is None:
        raise LookupError(f'pods "{name}" not found in namespace "{namespace}"')
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    pod_rv = int(meta["resourceVersion"])
    owner = next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), None)
    rc = None
    if owner and owner.get("kind") == "ReplicationController":
        rc = _get(api, f"/api/v1/namespaces/{namespace}/replicationcontrollers/{owner['name']}")
    title = f"Pod {namespace}/{name}" + (f" (ReplicationController {namespace}/{owner['name']})" if owner else "")

    pod_history = history(api, f"/api/v1/namespaces/{namespace}/pods", name, pod_rv)
    pod_events = _events(api, namespace, meta["uid"])
    by_reason: dict[str, list[dict[str, Any]]] = {}
    for ev in pod_events:
        by_reason.setdefault(ev.get("reason", ""), []).append(ev)

    created_rv = next((str(rv) for t, rv, _ in pod_history if t == "ADDED"), None)
    bound_rv = next((str(rv) for _, rv, o in pod_history if (o.get("spec") or {}).get("nodeName")), None)
    running_rv = next((str(rv) for _, rv, o in pod_history if (o.get("status") or {}).get("phase") == "Running"),
                      None)
    # The kubelet's first status report after the binding (Pending, ContainerCreating).
    reported_rv = next((str(rv) for _, rv, o in pod_history
                        if bound_rv and rv > int(bound_rv) and (o.get("status") or {}).get("containerStatuses")),
                       None)

    steps: list[Step] = []
    node = spec.get("nodeName")

    # Step 1: the three list-watch clients.
    for component, lease in (("controller-manager", "kube-controller-manager"), ("scheduler", "kube-scheduler")):
        obj = _get(api, f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease}")
        lspec = (obj or {}).get("spec") or {}
        steps.append(Step(1, component, f"lists and watches the APIServer (leader {lspec.get('holderIdentity')})"
                          if obj else "lists and watches the APIServer (no leader Lease seen)",
                          lspec.get("acquireTime"), done=obj is not None))
    if node:
        node_obj = _get(api, f"/api/v1/nodes/{node}") or {}
        ready: dict[str, Any] = next((c for c in (node_obj.get("status") or {}).get("conditions") or []
                                      if c.get("type") == "Ready"), {})
        steps.append(Step(1, f"kubelet {node}", f"lists and watches Pods bound to {node} (node {'Ready' if ready.get('status') == 'True' else 'not Ready'})",
                          ready.get("lastTransitionTime") or (node_obj.get("metadata") or {}).get("creationTimestamp")))
    else:
        steps.append(Step(1, "kubelet", "lists and watches its node's Pods (no node chosen yet)", done=False))

    # Steps 2 to 6: the owner, or the Pod itself when it was created directly.
    if rc is not None:
        rmeta = rc["metadata"]
        rc_history = history(api, f"/api/v1/namespaces/{namespace}/replicationcontrollers", rmeta["name"],
                             int(rmeta["resourceVersion"]))
        rc_rv = next((str(rv) for t, rv, _ in rc_history if t == "ADDED"), None)
        manager = (rmeta.get("managedFields") or [{}])[0].get("manager") or "a client"
        key = f"/registry/controllers/{namespace}/{rmeta['name']}"
        created_by = next((ev for ev in _events(api, namespace, rmeta["uid"])
                           if ev.get("reason") == "SuccessfulCreate" and ev.get("message") == f"Created pod: {name}"),
                          None)
        steps += [
            Step(2, f"client ({manager})", f"submitted ReplicationController {namespace}/{rmeta['name']}",
                 rmeta.get("creationTimestamp"), resource_version=rc_rv),
            Step(3, "apiserver", f"validated it, wrote {key} to etcd and acknowledged",
                 rmeta.get("creationTimestamp"), resource_version=rc_rv),
            Step(4, "etcd -> apiserver", "etcd's watch delivered the new key to the APIServer's watch cache",
                 rmeta.get("creationTimestamp"), resource_version=rc_rv),
            Step(5, "apiserver -> controller-manager", "the RC's ADDED event reached the controller-manager",
                 _event_time(created_by) if created_by else None, resource_version=rc_rv, done=created_by is not None),
            Step(6, "controller-manager", f"ReplicationController controller created Pod {name} (SuccessfulCreate)",
                 _event_time(created_by) if created_by else meta.get("creationTimestamp"),
                 resource_version=created_rv),
        ]
    else:
        why = "no controller: the Pod was created directly" if not owner else \
            f"owned by {owner.get('kind')} {owner.get('name')}, which kubesim does not run"
        steps += [
            Step(2, "client", f"submitted Pod {namespace}/{name}", meta.get("creationTimestamp"),
                 resource_version=created_rv),
            Step(3, "apiserver", f"validated it, wrote /registry/pods/{namespace}/{name} to etcd and acknowledged",
                 meta.get("creationTimestamp"), resource_version=created_rv),
            Step(4, "etcd -> apiserver", "etcd's watch delivered the new key to the APIServer's watch cache",
                 meta.get("creationTimestamp"), resource_version=created_rv),
            Step(5, "controller-manager", why, done=False),
            Step(6, "controller-manager", why, done=False),
        ]

    # Steps 7 to 11: stored, watched, scheduled, bound.
    scheduled_events = by_reason.get("Scheduled") or []
    failed_events = by_reason.get("FailedScheduling") or []
    scheduled = scheduled_events[0] if scheduled_events else None
    failed = failed_events[-1] if failed_events else None
    steps.append(Step(7, "apiserver", f"stored /registry/pods/{namespace}/{name}", meta.get("creationTimestamp"),
                      resource_version=created_rv))
    first_scheduler_event = scheduled or failed
    steps.append(Step(8, "apiserver -> scheduler", "the Pod's ADDED event reached the scheduler",
                      _event_time(first_scheduler_event) if first_scheduler_event else None,
                      resource_version=created_rv, done=first_scheduler_event is not None))
    annotations = meta.get("annotations") or {}
    if spec.get("nodeName") and scheduled is None and "kubesim.io/selected-node" not in annotations:
        steps.append(Step(9, "scheduler", f"not scheduled: spec.nodeName was set to {node} at creation", done=False))
        steps.append(Step(10, "scheduler", "no binding: the Pod was pinned with spec.nodeName", done=False))
    else:
        steps.append(_step9(annotations, scheduled, failed))
        steps.append(Step(10, "scheduler", f"bound the Pod to {node} through pods/binding (Scheduled)" if scheduled
                          else "waiting: not bound yet", _event_time(scheduled) if scheduled else None,
                          resource_version=bound_rv, done=scheduled is not None))
    kubelet_events = [ev for ev in pod_events if (ev.get("source") or {}).get("component") == "kubelet"]
    first_kubelet = kubelet_events[0] if kubelet_events else None
    steps.append(Step(11, f"apiserver -> kubelet {node or ''}".strip(),
                      "the binding reached the node's kubelet" if first_kubelet else
                      "waiting: no kubelet has reported on the Pod yet",
                      _event_time(first_kubelet) if first_kubelet else None, resource_version=bound_rv,
                      done=first_kubelet is not None))

    # Steps 12 and 13: the kubelet runs the containers; the APIServer stores the status.
    started = by_reason.get("Started") or []
    containers = ", ".join(sorted({c.get("name", "") for c in status.get("containerStatuses") or []})) or "-"
    steps.append(Step(12, f"kubelet {node or ''}".strip(),
                      f"started containers {containers} (Pulling, Pulled, Created, Started) and reported status"
                      if started else f"waiting: containers not started (phase {status.get('phase', 'Pending')})",
                      _event_time(started[-1]) if started else None, resource_version=reported_rv,
                      done=bool(started)))
    pod_ready: dict[str, Any] = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
    steps.append(Step(13, "apiserver", f"stored the Running status (podIP {status.get('podIP')}) and answered the "
                      "kubelet" if running_rv else f"waiting: phase is {status.get('phase', 'Pending')}",
                      pod_ready.get("lastTransitionTime") if running_rv else None, resource_version=running_rv,
                      done=running_rv is not None))

    base = parse_time(next((s.time for s in steps if s.step == 2 and s.time), None))
    if base is not None:
        previous = 0.0
        for s in steps:
            t = parse_time(s.time)
            if t is None:
                continue
            s.seconds = round((t - base).total_seconds(), 3)
            if s.step >= 2 and s.done:
                # Creation and condition times are whole seconds (Kubernetes' Time): such a step
                # is shown no earlier than the step before it, which it cannot precede.
                s.seconds = previous = max(s.seconds, previous)
    return steps, title


def _step9(annotations: dict[str, str], scheduled: dict[str, Any] | None, failed: dict[str, Any] | None) -> Step:
    filtered = {}
    with contextlib.suppress(ValueError, TypeError):
        filtered = json.loads(annotations.get("kubesim.io/filter-result") or "{}")
    scores = {}
    with contextlib.suppress(ValueError, TypeError):
        scores = json.loads(annotations.get("kubesim.io/score-result") or "{}")
    chosen = annotations.get("kubesim.io/selected-node")
    if scheduled is not None and chosen:
        best = (scores.get("nodes") or [{}])[0]
        what = (f"filtered {filtered.get('evaluated', '?')} of {filtered.get('nodes', '?')} nodes "
                f"({filtered.get('feasible', '?')} feasible), scored them, picked {chosen}"
                + (f" (total score {best.get('total')})" if best.get("total") is not None else ""))
        return Step(9, "scheduler", what, _event_time(scheduled))
    if failed is not None:
        return Step(9, "scheduler", f"waiting: {failed.get('message')}", _event_time(failed), done=False)
    return Step(9, "scheduler", "waiting: the scheduler has not looked at the Pod yet", done=False)


# --- output ------------------------------------------------------------------------------

def render(steps: list[Step], title: str) -> str:
    lines = [title, ("TIME is since step 2, to the second for creation and condition times (Kubernetes' Time), "
                     "to the microsecond for Events."), ""]
    rows = [("STEP", "COMPONENT", "WHAT", "TIME", "RV")]
    for s in steps:
        when = "-" if s.seconds is None else f"{s.seconds:+.3f}s"
        rows.append((str(s.step), s.component, s.what, when, s.resource_version or "-"))
    widths = [max(len(r[i]) for r in rows) for i in (0, 1, 3, 4)]
    for r in rows:
        lines.append(f"{r[0].ljust(widths[0])}  {r[1].ljust(widths[1])}  {r[3].rjust(widths[2])}  "
                     f"{r[4].rjust(widths[3])}  {r[2]}")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    namespace, sep, name = args.pod.partition("/")
    if not sep or not namespace or not name:
        print("kubesim trace: give the Pod as NAMESPACE/NAME, e.g. default/web-x7k2p")
        return 2
    try:
        config = find_config(args.server, args.data_dir)
    except (FileNotFoundError, ValueError, ConfigError) as e:
        print(f"kubesim trace: {e}")
        return 2
    with httpx.Client(**config.httpx_options(), timeout=httpx.Timeout(10, read=10)) as api:
        try:
            steps, title = build(api, namespace, name)
        except LookupError as e:
            print(f"kubesim trace: {e}")
            return 1
    if args.json:
        print(json.dumps({"pod": f"{namespace}/{name}", "title": title, "steps": [asdict(s) for s in steps],
                          "generated": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")},
                         indent=2))
    else:
        print(render(steps, title))
    return 0
