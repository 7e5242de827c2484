"""kubesim's metrics-server: resource usage of nodes and Pods, served as ``metrics.k8s.io/v1beta1``.

As Kubernetes' metrics-server does: it watches Nodes (and Pods, for their
labels), scrapes each node's kubelet ``/metrics/resource`` every
``--metric-resolution``, keeps the last two samples of each node and
container, and serves NodeMetrics and PodMetrics (cpu as the rate between two
samples, memory as the latest working set) behind the APIServer's aggregation
layer, which ``kubectl top`` and the HorizontalPodAutoscaler read.

- :mod:`metrics_server.scraper`: the scrape loop and the kubelet's text format;
- :mod:`metrics_server.storage`: samples, rates and windows;
- :mod:`metrics_server.api`: the HTTP API (discovery documents, lists, gets,
  label selectors, Status errors).
"""
