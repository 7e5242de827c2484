"""The Service fields kube-apiserver keeps in step on every write, before validation sees them.

- :func:`normalize_cluster_ips` keeps ``clusterIP`` and ``clusterIPs`` in
  agreement for clients that only know the singular field;
- :func:`patch_allocated_values` lets a client resubmit the manifest it
  created a Service from (without the ClusterIP and NodePorts the server
  chose) and keep what was allocated;
- :func:`drop_type_dependent_fields` clears what a type change made
  meaningless (ClusterIPs when becoming ExternalName, NodePorts when becoming
  ClusterIP...), when the client did not also change it.

These are ``normalizeClusterIPs``, ``patchAllocatedValues`` (Kubernetes'
Service REST) and ``dropTypeDependentFields`` (its strategy), on wire-form
dicts. Pure functions that change only the new object.
"""

from __future__ import annotations

from typing import Any

from apiserver.registry.core.service.alloc import (
    cluster_ips,
    ip_families,
    needs_cluster_ip,
    needs_health_check,
    needs_node_port,
)

Obj = dict[str, Any]


def _spec(svc: Obj) -> Obj:
    spec = svc.get("spec")
    if not isinstance(spec, dict):
        spec = svc["spec"] = {}
    return spec


def _same_cluster_ips(a: Obj, b: Obj) -> bool:
    return (_spec(a).get("clusterIP") or "") == (_spec(b).get("clusterIP") or "") and cluster_ips(a) == cluster_ips(b)


def normalize_cluster_ips(svc: Obj, old: Obj | None) -> None:
    """Fill ``clusterIPs`` from ``clusterIP`` where the client set only the singular one."""
    spec = _spec(svc)
    cluster_ip = spec.get("clusterIP") or ""
    if old is None:
        if cluster_ip and not cluster_ips(svc):
            spec["clusterIPs"] = [cluster_ip]
        return
    old_spec = _spec(old)
    old_cluster_ip = old_spec.get("clusterIP") or ""
    if cluster_ips(old) and not cluster_ips(svc) and old_cluster_ip == cluster_ip:
        # An old client that patched something else and knows nothing of clusterIPs.
        spec["clusterIPs"] = cluster_ips(old)
    if old_cluster_ip != cluster_ip:
        if old_cluster_ip and not cluster_ip:
            # Clearing the singular field clears the plural one on the client's behalf.
            if _same_cluster_ips_plural(old, svc):
                spec.pop("clusterIPs", None)
        elif _same_cluster_ips_plural(old, svc):
            spec["clusterIPs"] = [cluster_ip]


def _same_cluster_ips_plural(a: Obj, b: Obj) -> bool:
    return cluster_ips(a) == cluster_ips(b)


def patch_allocated_values(svc: Obj, old: Obj) -> None:
    """Keep the ClusterIPs and NodePorts the server allocated when the client leaves them out."""
    spec, old_spec = _spec(svc), _spec(old)
    if needs_cluster_ip(old) and needs_cluster_ip(svc):
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not cluster_ips(svc) and cluster_ips(old):
            spec["clusterIPs"] = cluster_ips(old)
    if needs_node_port(old) and needs_node_port(svc):
        ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
        old_ports = [p for p in old_spec.get("ports") or [] if isinstance(p, dict)]
        used = {int(p["nodePort"]) for p in old_ports if p.get("nodePort")} & \
            {int(p["nodePort"]) for p in ports if p.get("nodePort")}
        # NodePorts are matched by port name: the client may have changed the rest of the port.
        by_name = {p.get("name") or "": int(p.get("nodePort") or 0) for p in old_ports}
        for port in ports:
            if not port.get("nodePort"):
                value = by_name.get(port.get("name") or "", 0)
                if value and value not in used:
                    port["nodePort"] = value
    if needs_health_check(old) and needs_health_check(svc) and not spec.get("healthCheckNodePort") and \
            old_spec.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]


def drop_type_dependent_fields(svc: Obj, old: Obj) -> None:
    """Clear what the new type does not use and the client did not change (it is released by the allocators)."""
    spec, old_spec = _spec(svc), _spec(old)
    if needs_cluster_ip(old) and not needs_cluster_ip(svc):
        if _same_cluster_ips(old, svc):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        if ip_families(old) == ip_families(svc):
            spec.pop("ipFamilies", None)
        if old_spec.get("ipFamilyPolicy") == spec.get("ipFamilyPolicy"):
            spec.pop("ipFamilyPolicy", None)
    if needs_node_port(old) and not needs_node_port(svc):
        old_ports = {int(p["nodePort"]) for p in old_spec.get("ports") or [] if isinstance(p, dict)
                     and p.get("nodePort")}
        new_ports = {int(p["nodePort"]) for p in spec.get("ports") or [] if isinstance(p, dict) and p.get("nodePort")}
        if new_ports <= old_ports:
            for port in spec.get("ports") or []:
                if isinstance(port, dict):
                    port.pop("nodePort", None)
    if needs_health_check(old) and not needs_health_check(svc) and \
            spec.get("healthCheckNodePort") == old_spec.get("healthCheckNodePort"):
        spec.pop("healthCheckNodePort", None)
    if old_spec.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer" and \
            spec.get("allocateLoadBalancerNodePorts") is not None and \
            spec.get("allocateLoadBalancerNodePorts") == old_spec.get("allocateLoadBalancerNodePorts"):
        spec.pop("allocateLoadBalancerNodePorts", None)
    if old_spec.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer" and \
            spec.get("loadBalancerClass") == old_spec.get("loadBalancerClass"):
        spec.pop("loadBalancerClass", None)
    if _externally_accessible(old) and not _externally_accessible(svc) and \
            spec.get("externalTrafficPolicy") == old_spec.get("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)
    if spec.get("type") != "LoadBalancer":
        status = svc.get("status")
        if isinstance(status, dict):
            status["loadBalancer"] = {}


def _externally_accessible(svc: Obj) -> bool:
    spec = _spec(svc)
    kind = spec.get("type")
    return kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and bool(spec.get("externalIPs")))
