"""Registering metrics-server with the APIServer's aggregation layer (``--register-apiservice``).

In Kubernetes, metrics-server's manifest (``components.yaml``) creates the
``kube-system/metrics-server`` Service and the ``v1beta1.metrics.k8s.io``
APIService naming it, and the endpoints controller fills the Service's
Endpoints with the metrics-server Pod's address. kubesim's metrics-server is
a process, not a Pod, and usually on loopback, which Endpoints may not hold;
so with ``--register-apiservice`` it writes, when it starts, the manifest's
RBAC objects (the ``metrics-server`` ServiceAccount, the ``system:metrics-server``
ClusterRole that lets it read nodes, Pods and the kubelets' ``nodes/metrics``,
``system:aggregated-metrics-reader`` aggregated into ``view``, ``edit`` and
``admin``, and their bindings), an ``ExternalName`` Service naming the host
the APIServer reaches it at (``--advertise-address``: ``localhost`` when it
listens on loopback) and the APIService with the port it serves, by
server-side apply (field manager ``metrics-server``), so that a restart
elsewhere updates them. They are written with ``--register-kubeconfig``'s
credentials (an admin's: whoever applies ``components.yaml`` in Kubernetes),
while metrics-server itself acts as its ServiceAccount.
kube-aggregator resolves an ExternalName Service to
``<externalName>:<the APIService's port>`` and needs no Endpoints for it.

Concurrency: one coroutine, retried until the APIServer takes the objects.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from typing import Any, Final

import httpx

from machinery.api import kinds
from machinery.client import errors
from machinery.client.rest import Client, PatchType

log = logging.getLogger("metrics_server")

NAMESPACE: Final = "kube-system"
NAME: Final = "metrics-server"
APISERVICE: Final = "v1beta1.metrics.k8s.io"
FIELD_MANAGER: Final = "metrics-server"
_LABELS: Final = {"k8s-app": "metrics-server"}
_PORT_NAME: Final = "https"


def advertise_address(bind_address: str) -> str:
    """The host the APIServer reaches this process at, from the address it listens on."""
    if not bind_address:
        return "localhost"
    try:
        address = ipaddress.ip_address(bind_address)
    except ValueError:
        return bind_address  # a host name
    if address.is_loopback:
        return "localhost"
    if address.is_unspecified:
        return socket.gethostname()
    return bind_address


_RBAC: Final = "rbac.authorization.k8s.io/v1"
#: The labels that aggregate a ClusterRole into ``view``, ``edit`` and ``admin``.
_AGGREGATE: Final = {f"rbac.authorization.k8s.io/aggregate-to-{role}": "true" for role in ("admin", "edit", "view")}
_SUBJECTS: Final = [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]


def rbac_objects() -> list[tuple[Any, dict[str, Any]]]:
    """(resource, object) of metrics-server's ServiceAccount, roles and bindings, as its manifest has them."""
    return [
        (kinds.SERVICE_ACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                  "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": _LABELS}}),
        (kinds.CLUSTER_ROLES, {"apiVersion": _RBAC, "kind": "ClusterRole",
                               "metadata": {"name": "system:aggregated-metrics-reader",
                                            "labels": {**_LABELS, **_AGGREGATE}},
                               "rules": [{"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"],
                                          "verbs": ["get", "list", "watch"]}]}),
        (kinds.CLUSTER_ROLES, {"apiVersion": _RBAC, "kind": "ClusterRole",
                               "metadata": {"name": "system:metrics-server", "labels": _LABELS},
                               "rules": [{"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
                                         {"apiGroups": [""], "resources": ["pods", "nodes"],
                                          "verbs": ["get", "list", "watch"]}]}),
        (kinds.ROLE_BINDINGS, {"apiVersion": _RBAC, "kind": "RoleBinding",
                               "metadata": {"name": "metrics-server-auth-reader", "namespace": NAMESPACE,
                                            "labels": _LABELS},
                               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                           "name": "extension-apiserver-authentication-reader"},
                               "subjects": _SUBJECTS}),
        (kinds.CLUSTER_ROLE_BINDINGS, {"apiVersion": _RBAC, "kind": "ClusterRoleBinding",
                                       "metadata": {"name": "metrics-server:system:auth-delegator",
                                                    "labels": _LABELS},
                                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                   "name": "system:auth-delegator"},
                                       "subjects": _SUBJECTS}),
        (kinds.CLUSTER_ROLE_BINDINGS, {"apiVersion": _RBAC, "kind": "ClusterRoleBinding",
                                       "metadata": {"name": "system:metrics-server", "labels": _LABELS},
                                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                   "name": "system:metrics-server"},
                                       "subjects": _SUBJECTS}),
    ]


def objects(host: str, port: int) -> list[tuple[Any, dict[str, Any]]]:
    """(resource, object) of the manifest: RBAC, the Service and the APIService, in creation order."""
    return [
        *rbac_objects(),
        (kinds.SERVICES, {"apiVersion": "v1", "kind": "Service",
                          "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": _LABELS},
                          "spec": {"type": "ExternalName", "externalName": host,
                                   "ports": [{"name": _PORT_NAME, "port": port, "protocol": "TCP"}]}}),
        (kinds.API_SERVICES, {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                              "metadata": {"name": APISERVICE, "labels": _LABELS},
                              "spec": {"service": {"name": NAME, "namespace": NAMESPACE, "port": port},
                                       "group": "metrics.k8s.io", "version": "v1beta1",
                                       "insecureSkipTLSVerify": True, "groupPriorityMinimum": 100,
                                       "versionPriority": 100}}),
    ]


async def register(client: Client, host: str, port: int, *, retry: float = 1.0) -> None:
    """Apply the objects, retrying each until the APIServer accepts it."""
    for resource, obj in objects(host, port):
        namespace = obj["metadata"].get("namespace")
        while True:
            try:
                await client.patch(resource, obj["metadata"]["name"], obj, namespace=namespace,
                                   patch_type=PatchType.APPLY, field_manager=FIELD_MANAGER, force=True)
                break
            except (errors.ApiError, errors.UnexpectedResponse, httpx.HTTPError, OSError) as err:
                log.warning("registering %s %s failed (retrying): %s", resource.kind, obj["metadata"]["name"], err)
                await asyncio.sleep(retry)
    log.info("registered APIService %s: service %s/%s at %s:%d", APISERVICE, NAMESPACE, NAME, host, port)
