"""The Prometheus metrics the shared machinery exports, on the process's default registry.

Names and labels follow Kubernetes' own (``rest_client_requests_total``,
``workqueue_depth``, ``leader_election_master_status``...) so that dashboards
written for Kubernetes components read kubesim's. Each component's
``/metrics`` (see :mod:`machinery.process`) serves the default registry, which
also carries whatever metrics the component defines itself.

prometheus-client's metrics are thread-safe; here they are only touched from
the event loop.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

REST_CLIENT_REQUESTS = Counter(
    "rest_client_requests_total",
    "Number of HTTP requests, partitioned by status code and method.",
    ["code", "method"],
)

WORKQUEUE_DEPTH = Gauge("workqueue_depth", "Current depth of workqueue", ["name"])
WORKQUEUE_ADDS = Counter("workqueue_adds_total", "Total number of adds handled by workqueue", ["name"])
WORKQUEUE_RETRIES = Counter("workqueue_retries_total", "Total number of retries handled by workqueue",
                            ["name"])
WORKQUEUE_WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
    ["name"],
    buckets=(1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0),
)

LEADER_ELECTION_MASTER_STATUS = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
    "1 indicates master. 'name' is the string used to identify the lease.",
    ["name"],
)

INFORMER_LISTS = Counter("kubesim_informer_lists_total",
                         "Lists (initial and relists) made by informers' reflectors.", ["resource"])

EVENTS_DROPPED = Counter(
    "kubesim_events_dropped_total",
    "Events the recorder did not write: its queue was full, the server rejected them, it gave up "
    "retrying, or (reason spam) the EventCorrelator's spam filter refused them.",
    ["reason"],
)

EVENTS_PENDING = Gauge(
    "kubesim_events_pending",
    "Events recorded and not yet written (waiting for a writer, or retrying): how far the recorder is behind.",
)
