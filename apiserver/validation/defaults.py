"""Kubernetes' core/v1 defaulting: Pods, Pod templates, RCs, Nodes, Namespaces, Services and the rest.

kube-apiserver fills in omitted fields while decoding every request body
(``pkg/apis/core/v1/defaults.go`` and the generated defaulters). Clients rely
on seeing those values: kubectl shows ``restartPolicy: Always``, the scheduler
reads ``schedulerName``. This module does the same to wire-form dicts, in
place, before validation; each resource's strategy calls what its kind needs
(every workload kind calls :func:`default_pod_template`). What admission adds
afterwards (priorities, default tolerations) is in :mod:`apiserver.admission`.

Every function is idempotent (defaulting an object twice changes nothing
the second time), because the APIServer defaults on create and again on
every update.

Pure functions that mutate only the dict they are handed; no state.
"""

from __future__ import annotations

import re
from typing import Any, Final

Obj = dict[str, Any]

_FILE_MODE: Final = 0o644

#: Defaults of the volume sources that have any, field by field.
_VOLUME_SOURCE_DEFAULTS: Final[dict[str, dict[str, Any]]] = {
    "secret": {"defaultMode": _FILE_MODE},
    "configMap": {"defaultMode": _FILE_MODE},
    "downwardAPI": {"defaultMode": _FILE_MODE},
    "projected": {"defaultMode": _FILE_MODE},
    "hostPath": {"type": ""},
    "iscsi": {"iscsiInterface": "default"},
    "rbd": {"pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"},
    "azureDisk": {"cachingMode": "ReadWrite", "fsType": "ext4", "readOnly": False, "kind": "Shared"},
    "scaleIO": {"storageMode": "ThinProvisioned", "fsType": "xfs"},
}

# The reference grammar of container images (github.com/distribution/reference):
# an optional registry host, lowercase path components, an optional tag and digest.
_DOMAIN_COMPONENT: Final = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_PATH_COMPONENT: Final = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_REFERENCE: Final = re.compile(
    rf"^(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*(?::[0-9]+)?/)?"
    rf"{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$"
)


def default_pod(pod: Obj) -> None:
    """A Pod's v1 defaults (what kube-apiserver fills in while decoding, before admission)."""
    spec = _child(pod, "spec")
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            _copy_limits_to_requests(container)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork"):
        # On the host's network a container port is a host port.
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or ():
                for port in container.get("ports") or ():
                    if not port.get("hostPort") and port.get("containerPort"):
                        port["hostPort"] = port["containerPort"]
    default_pod_spec(spec)
    default_pod_status(pod)


def default_pod_status(pod: Obj) -> None:
    """The defaults of a Pod's status alone: what a ``pods/status`` write needs."""
    status = pod.get("status")
    if isinstance(status, dict):
        _sync_ip_lists(status, "podIP", "podIPs")
        _sync_ip_lists(status, "hostIP", "hostIPs")


def default_pod_template(template: Obj | None) -> None:
    """A PodTemplateSpec's defaults, as every workload kind embeds one."""
    if isinstance(template, dict):
        default_pod_spec(_child(template, "spec"))


def default_replication_controller(rc: Obj) -> None:
    spec = _child(rc, "spec")
    template = spec.get("template")
    labels = (template.get("metadata") or {}).get("labels") if isinstance(template, dict) else None
    if labels is not None:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = _child(rc, "metadata")
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    default_pod_template(template)


def default_node(node: Obj) -> None:
    status = node.get("status")
    if isinstance(status, dict) and status.get("allocatable") is None and status.get("capacity") is not None:
        status["allocatable"] = dict(status["capacity"])
    spec = node.get("spec")
    if isinstance(spec, dict):
        # kube-apiserver's internal version keeps only the list; writing it back
        # to v1 fills both fields from it.
        if spec.get("podCIDR") and not spec.get("podCIDRs"):
            spec["podCIDRs"] = [spec["podCIDR"]]
        if spec.get("podCIDRs"):
            spec["podCIDR"] = spec["podCIDRs"][0]


def default_namespace(namespace: Obj) -> None:
    meta = _child(namespace, "metadata")
    # A namespace generated from generateName has no name yet; Kubernetes labels it once named.
    if meta.get("name"):
        _child(meta, "labels")["kubernetes.io/metadata.name"] = meta["name"]
    status = _child(namespace, "status")
    if not status.get("phase"):
        status["phase"] = "Active"


def prepare_namespace_create(namespace: Obj) -> None:
    """What the Namespace strategy sets on create only: an Active status and the ``kubernetes`` finalizer.

    Not part of :func:`default_namespace`: the finalizer may be removed later
    (through ``namespaces/finalize``), and defaulting on the next update must
    not put it back.
    """
    namespace["status"] = {"phase": "Active"}
    finalizers = _child(namespace, "spec").setdefault("finalizers", [])
    if "kubernetes" not in finalizers:
        finalizers.append("kubernetes")


def default_pod_template_object(pod_template: Obj) -> None:
    """A PodTemplate object: its ``template`` is defaulted as every workload's is."""
    default_pod_template(pod_template.get("template"))


def default_secret(secret: Obj) -> None:
    if not secret.get("type"):
        secret["type"] = "Opaque"


def default_endpoints(endpoints: Obj) -> None:
    for subset in endpoints.get("subsets") or ():
        for port in (subset or {}).get("ports") or ():
            if isinstance(port, dict) and not port.get("protocol"):
                port["protocol"] = "TCP"


def default_limit_range(limit_range: Obj) -> None:
    """``SetDefaults_LimitRangeItem``: a Container limit defaults from max, its request from the limit, then min."""
    for item in (limit_range.get("spec") or {}).get("limits") or ():
        if not isinstance(item, dict) or item.get("type") != "Container":
            continue
        default = dict(item.get("default") or {})
        request = dict(item.get("defaultRequest") or {})
        for resource, quantity in (item.get("max") or {}).items():
            default.setdefault(resource, quantity)
        for resource, quantity in default.items():
            request.setdefault(resource, quantity)
        for resource, quantity in (item.get("min") or {}).items():
            request.setdefault(resource, quantity)
        # Empty maps stay unset: Go omits them when writing the object out.
        if default:
            item["default"] = default
        if request:
            item["defaultRequest"] = request


#: How long ClientIP session affinity lasts unless told (``DefaultClientIPServiceAffinitySeconds``).
DEFAULT_CLIENT_IP_AFFINITY_SECONDS: Final = 10800


def _externally_accessible(spec: Obj) -> bool:
    kind = spec.get("type")
    return kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and bool(spec.get("externalIPs")))


def default_service(svc: Obj) -> None:
    """``SetDefaults_Service``: affinity None, type ClusterIP, TCP ports whose targetPort is the port, policies.

    ``ipFamilies`` and ``ipFamilyPolicy`` are not defaults: the allocation
    step infers them from the cluster's ranges (they depend on the flags).
    """
    spec = _child(svc, "spec")
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        client_ip = (spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}
        if client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": DEFAULT_CLIENT_IP_AFFINITY_SECONDS}}
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    for port in spec.get("ports") or ():
        if not isinstance(port, dict):
            continue
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port") or 0
    if _externally_accessible(spec) and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and spec["type"] in ("NodePort", "LoadBalancer", "ClusterIP"):
        spec["internalTrafficPolicy"] = "Cluster"
    if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True
    default_service_status(svc)


def default_service_status(svc: Obj) -> None:
    """A LoadBalancer's ingress IPs are VIPs unless said otherwise (LoadBalancerIPMode, on since 1.30)."""
    if (svc.get("spec") or {}).get("type") != "LoadBalancer":
        return
    for ingress in ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or ():
        if isinstance(ingress, dict) and ingress.get("ip") and ingress.get("ipMode") is None:
            ingress["ipMode"] = "VIP"


def default_persistent_volume(pv: Obj) -> None:
    spec = _child(pv, "spec")
    if not spec.get("persistentVolumeReclaimPolicy"):
        spec["persistentVolumeReclaimPolicy"] = "Retain"
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    host_path = spec.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""
    status = _child(pv, "status")
    if not status.get("phase"):
        status["phase"] = "Pending"


def default_persistent_volume_claim(pvc: Obj) -> None:
    spec = _child(pvc, "spec")
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    status = _child(pvc, "status")
    if not status.get("phase"):
        status["phase"] = "Pending"


# --- the Pod spec, as templates have it too -------------------------------------------------

def default_pod_spec(spec: Obj) -> None:
    """``SetDefaults_PodSpec`` and the defaults of everything a Pod spec contains."""
    for key, value in (("dnsPolicy", "ClusterFirst"), ("restartPolicy", "Always"),
                       ("schedulerName", "default-scheduler")):
        if not spec.get(key):
            spec[key] = value
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    for volume in spec.get("volumes") or ():
        _default_volume(volume)
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or ():
            _default_container(container)


def default_ephemeral_containers(spec: Obj) -> None:
    """The defaults of a Pod's ephemeral containers alone (what ``pods/ephemeralcontainers`` adds)."""
    for container in spec.get("ephemeralContainers") or ():
        if isinstance(container, dict):
            _default_container(container)


def _default_container(container: Obj) -> None:
    if not container.get("imagePullPolicy"):
        container["imagePullPolicy"] = _pull_policy(container.get("image") or "")
    if not container.get("terminationMessagePath"):
        container["terminationMessagePath"] = "/dev/termination-log"
    if not container.get("terminationMessagePolicy"):
        container["terminationMessagePolicy"] = "File"
    for port in container.get("ports") or ():
        if not port.get("protocol"):
            port["protocol"] = "TCP"
    for var in container.get("env") or ():
        field_ref = (var.get("valueFrom") or {}).get("fieldRef")
        if isinstance(field_ref, dict):
            _default_field_ref(field_ref)
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(key)
        if isinstance(probe, dict):
            _default_probe(probe)
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            handler = lifecycle.get(hook)
            if isinstance(handler, dict) and isinstance(handler.get("httpGet"), dict):
                _default_http_get(handler["httpGet"])


def _pull_policy(image: str) -> str:
    """``Always`` for ``:latest`` or an image with neither tag nor digest, else ``IfNotPresent``.

    An image Kubernetes cannot parse gets ``IfNotPresent``, as it does there.
    """
    match = _IMAGE_REFERENCE.match(image)
    if match is None:
        return "IfNotPresent"
    tag, digest = match.group("tag"), match.group("digest")
    if tag == "latest" or (tag is None and digest is None):
        return "Always"
    return "IfNotPresent"


def _default_probe(probe: Obj) -> None:
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                       ("failureThreshold", 3)):
        if not probe.get(key):
            probe[key] = value
    if isinstance(probe.get("httpGet"), dict):
        _default_http_get(probe["httpGet"])
    grpc = probe.get("grpc")
    if isinstance(grpc, dict) and grpc.get("service") is None:
        grpc["service"] = ""


def _default_http_get(action: Obj) -> None:
    if not action.get("path"):
        action["path"] = "/"
    if not action.get("scheme"):
        action["scheme"] = "HTTP"


def _default_field_ref(selector: Obj) -> None:
    if not selector.get("apiVersion"):
        selector["apiVersion"] = "v1"


def _default_volume(volume: Obj) -> None:
    # A volume that names no source is an emptyDir.
    if not any(value is not None for key, value in volume.items() if key != "name"):
        volume["emptyDir"] = {}
    for key, defaults in _VOLUME_SOURCE_DEFAULTS.items():
        source = volume.get(key)
        if isinstance(source, dict):
            for field, value in defaults.items():
                if source.get(field) is None:
                    source[field] = value
    for item in (volume.get("downwardAPI") or {}).get("items") or ():
        if isinstance(item.get("fieldRef"), dict):
            _default_field_ref(item["fieldRef"])
    for projection in (volume.get("projected") or {}).get("sources") or ():
        for item in (projection.get("downwardAPI") or {}).get("items") or ():
            if isinstance(item.get("fieldRef"), dict):
                _default_field_ref(item["fieldRef"])
        token = projection.get("serviceAccountToken")
        if isinstance(token, dict) and token.get("expirationSeconds") is None:
            token["expirationSeconds"] = 3600


def _copy_limits_to_requests(container: Obj) -> None:
    """A limit without a request is also the request (Pods only, not templates)."""
    limits = (container.get("resources") or {}).get("limits")
    if not limits:
        return
    requests = _child(_child(container, "resources"), "requests")
    for resource, quantity in limits.items():
        requests.setdefault(resource, quantity)


def _sync_ip_lists(status: Obj, single: str, plural: str) -> None:
    """The single IP and the list agree, as after kube-apiserver's round trip through its internal version."""
    if status.get(single) and not status.get(plural):
        status[plural] = [{"ip": status[single]}]
    if status.get(plural):
        status[single] = status[plural][0].get("ip")


def _child(obj: Obj, key: str) -> Obj:
    """``obj[key]``, created empty when absent or null."""
    value = obj.get(key)
    if not isinstance(value, dict):
        value = obj[key] = {}
    return value
