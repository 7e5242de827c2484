"""The APIServer's aggregation layer: APIs served by other processes, behind the same URL space.

kube-apiserver's kube-aggregator puts extension API servers (metrics-server's
``metrics.k8s.io``) under ``/apis/<group>/<version>`` as if they were built
in: it proxies their requests, merges their groups into discovery, and keeps
each APIService's ``Available`` condition from its backend's health. kubesim's
does the same, driven by the stored ``apiregistration.k8s.io/v1`` APIService
objects:

- :mod:`apiserver.aggregator.apiservice`: where an APIService's backend is
  (its Service's Endpoints) and its ``Available`` condition;
- :mod:`apiserver.aggregator.availability`: the availability controller:
  every few seconds, each backend's ``/apis/<group>/<version>`` discovery
  document, written to the APIService's status and kept for aggregated
  discovery;
- :mod:`apiserver.aggregator.handler`: the ASGI layer in front of the
  APIServer: proxying, and discovery merging.
"""
