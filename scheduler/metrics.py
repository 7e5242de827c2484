"""kube-scheduler's Prometheus metrics, by Kubernetes' names, on the process's default registry.

``/metrics`` (served by :mod:`machinery.process`) exposes them with the
shared client and work-queue metrics. ``scheduler_pending_pods`` is read
from the queue when scraped, so keeping it current costs nothing per Pod.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Gauge, Histogram

SCHEDULED: Final = "scheduled"
UNSCHEDULABLE: Final = "unschedulable"
ERROR: Final = "error"

SCHEDULE_ATTEMPTS: Final = Counter(
    "scheduler_schedule_attempts_total",
    "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, "
    "while 'error' means an internal scheduler problem.",
    ["result", "profile"],
)

SCHEDULING_ATTEMPT_DURATION: Final = Histogram(
    "scheduler_scheduling_attempt_duration_seconds",
    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
    ["result", "profile"],
    buckets=tuple(0.001 * 2**i for i in range(15)),
)

PENDING_PODS: Final = Gauge(
    "scheduler_pending_pods",
    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means "
    "number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler "
    "attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never "
    "attempted to schedule because they are gated.",
    ["queue"],
)

PREEMPTION_ATTEMPTS: Final = Counter("scheduler_preemption_attempts_total",
                                     "Total preemption attempts in the cluster till now")

PREEMPTION_VICTIMS: Final = Histogram("scheduler_preemption_victims", "Number of selected preemption victims",
                                      buckets=tuple(2**i for i in range(7)))
