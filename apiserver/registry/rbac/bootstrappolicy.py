"""The default roles and bindings kube-apiserver 1.32 creates at its first start (its ``bootstrappolicy``).

Every component of a cluster runs under these and nothing more: the scheduler
as ``system:kube-scheduler``, the controller-manager as
``system:kube-controller-manager`` with one ServiceAccount per controller
(``system:controller:<name>`` roles), kubelets as ``system:node:<name>``
(their rules, :data:`NODE_RULES`, are what the Node authorizer grants every
node), users through ``cluster-admin``, ``admin``, ``edit`` and ``view``.
``admin``, ``edit`` and ``view`` carry no rules of their own: they aggregate
the ClusterRoles labelled ``rbac.authorization.k8s.io/aggregate-to-<role>``
(the ``system:aggregate-to-*`` ones, and any a user adds), which the
controller-manager's clusterrole-aggregation controller copies into them.

The rules are Kubernetes' own (what ``kubectl get clusterrole -o yaml`` shows
on a fresh 1.32 cluster), written here in a compact form:
``rule("get list watch", "core apps", "pods deployments")`` where ``core`` is
the legacy group ``""``. Roles behind feature gates that are off by default in
1.32 (dynamic resource allocation, multiple service CIDRs, SELinux warnings)
are left out, as a default 1.32 cluster has them not.

Everything here is built once at import and never mutated (callers copy).
"""

from __future__ import annotations

import copy
from typing import Any, Final

Obj = dict[str, Any]

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
AUTOUPDATE: Final = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAPPING_LABEL: Final = "kubernetes.io/bootstrapping"
AGGREGATE_TO: Final = "rbac.authorization.k8s.io/aggregate-to-"
CONTROLLER_PREFIX: Final = "system:controller:"
#: Where the controllers' ServiceAccounts live.
SYSTEM_NAMESPACE: Final = "kube-system"

_READ: Final = "get list watch"
_WRITE: Final = "create delete deletecollection patch update"
_EVENTS_WRITE: Final = "create patch update"


def rule(verbs: str, groups: str, resources: str, *, names: str = "") -> Obj:
    """A resource rule; each argument is space-separated, ``core`` naming the legacy group."""
    out: Obj = {"verbs": verbs.split(), "apiGroups": ["" if g == "core" else g for g in groups.split()],
                "resources": resources.split()}
    if names:
        out["resourceNames"] = names.split()
    return out


def url_rule(verbs: str, urls: str) -> Obj:
    return {"verbs": verbs.split(), "nonResourceURLs": urls.split()}


def _events() -> Obj:
    return rule(_EVENTS_WRITE, "core events.k8s.io", "events")


def _meta(name: str, labels: dict[str, str] | None = None, namespace: str | None = None) -> Obj:
    meta: Obj = {"name": name, "labels": {BOOTSTRAPPING_LABEL: "rbac-defaults", **(labels or {})},
                 "annotations": {AUTOUPDATE: "true"}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def cluster_role(name: str, rules: list[Obj], *, labels: dict[str, str] | None = None,
                 aggregate_from: str | None = None) -> Obj:
    role: Obj = {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole", "metadata": _meta(name, labels)}
    if aggregate_from is not None:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {AGGREGATE_TO + aggregate_from: "true"}}]}
        role["rules"] = None
    else:
        role["rules"] = rules
    return role


def subject(kind: str, name: str, namespace: str | None = None) -> Obj:
    if kind == "ServiceAccount":
        return {"kind": kind, "name": name, "namespace": namespace or SYSTEM_NAMESPACE}
    return {"kind": kind, "apiGroup": RBAC_GROUP, "name": name}


def cluster_role_binding(name: str, role: str, subjects: list[Obj]) -> Obj:
    binding: Obj = {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRoleBinding", "metadata": _meta(name),
                    "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role}}
    if subjects:
        binding["subjects"] = subjects
    return binding


# --- the system:node rules: what every kubelet may do (also the Node authorizer's rules) ------------

NODE_RULES: Final[list[Obj]] = [
    rule("create", "authentication.k8s.io", "tokenreviews"),
    rule("create", "authorization.k8s.io", "localsubjectaccessreviews subjectaccessreviews"),
    rule(_READ, "core", "services"),
    rule("create get list watch", "core", "nodes"),
    rule("patch update", "core", "nodes/status"),
    rule("patch update", "core", "nodes"),
    rule(_EVENTS_WRITE, "core", "events"),
    rule(_READ, "core", "pods"),
    rule("create delete", "core", "pods"),
    rule("patch update", "core", "pods/status"),
    rule("create", "core", "pods/eviction"),
    rule(_READ, "core", "configmaps secrets"),
    rule("get", "core", "persistentvolumeclaims persistentvolumes"),
    rule("get", "core", "endpoints"),
    rule("create get list watch", "certificates.k8s.io", "certificatesigningrequests"),
    rule("create delete get patch update", "coordination.k8s.io", "leases"),
    rule("get", "storage.k8s.io", "volumeattachments"),
    rule("create", "core", "serviceaccounts/token"),
    rule("get patch update", "core", "persistentvolumeclaims/status"),
    rule(_READ, "storage.k8s.io", "csidrivers"),
    rule("create delete get patch update", "storage.k8s.io", "csinodes"),
    rule(_READ, "node.k8s.io", "runtimeclasses"),
]


def _cluster_roles() -> list[Obj]:
    signers = "certificates.k8s.io"
    return [
        cluster_role("cluster-admin", [rule("*", "*", "*"), url_rule("*", "*")]),
        cluster_role("admin", [], aggregate_from="admin"),
        cluster_role("edit", [], aggregate_from="edit", labels={AGGREGATE_TO + "admin": "true"}),
        cluster_role("view", [], aggregate_from="view", labels={AGGREGATE_TO + "edit": "true"}),
        cluster_role("system:aggregate-to-admin", [
            rule("create", "authorization.k8s.io", "localsubjectaccessreviews"),
            rule("create delete deletecollection get list patch update watch", RBAC_GROUP, "rolebindings roles"),
        ], labels={AGGREGATE_TO + "admin": "true"}),
        cluster_role("system:aggregate-to-edit", [
            rule(_READ, "core", "pods/attach pods/exec pods/portforward pods/proxy secrets services/proxy"),
            rule("impersonate", "core", "serviceaccounts"),
            rule(_WRITE, "core", "pods pods/attach pods/exec pods/portforward pods/proxy"),
            rule("create", "core", "pods/eviction"),
            rule(_WRITE, "core", "configmaps events persistentvolumeclaims replicationcontrollers "
                                 "replicationcontrollers/scale secrets serviceaccounts services services/proxy"),
            rule("create", "core", "serviceaccounts/token"),
            rule(_WRITE, "apps", "daemonsets deployments deployments/rollback deployments/scale replicasets "
                                 "replicasets/scale statefulsets statefulsets/scale"),
            rule(_WRITE, "autoscaling", "horizontalpodautoscalers"),
            rule(_WRITE, "batch", "cronjobs jobs"),
            rule(_WRITE, "extensions", "daemonsets deployments deployments/rollback deployments/scale ingresses "
                                       "networkpolicies replicasets replicasets/scale replicationcontrollers/scale"),
            rule(_WRITE, "policy", "poddisruptionbudgets"),
            rule(_WRITE, "networking.k8s.io", "ingresses networkpolicies"),
            rule("create delete deletecollection get list patch update watch", "coordination.k8s.io", "leases"),
        ], labels={AGGREGATE_TO + "edit": "true"}),
        cluster_role("system:aggregate-to-view", [
            rule(_READ, "core", "configmaps endpoints persistentvolumeclaims persistentvolumeclaims/status pods "
                                "replicationcontrollers replicationcontrollers/scale serviceaccounts services "
                                "services/status"),
            rule(_READ, "core", "bindings events limitranges namespaces/status pods/log pods/status "
                                "replicationcontrollers/status resourcequotas resourcequotas/status"),
            rule(_READ, "core", "namespaces"),
            rule(_READ, "discovery.k8s.io", "endpointslices"),
            rule(_READ, "apps", "controllerrevisions daemonsets daemonsets/status deployments deployments/scale "
                                "deployments/status replicasets replicasets/scale replicasets/status statefulsets "
                                "statefulsets/scale statefulsets/status"),
            rule(_READ, "autoscaling", "horizontalpodautoscalers horizontalpodautoscalers/status"),
            rule(_READ, "batch", "cronjobs cronjobs/status jobs jobs/status"),
            rule(_READ, "extensions", "daemonsets daemonsets/status deployments deployments/scale "
                                      "deployments/status ingresses ingresses/status networkpolicies replicasets "
                                      "replicasets/scale replicasets/status replicationcontrollers/scale"),
            rule(_READ, "policy", "poddisruptionbudgets poddisruptionbudgets/status"),
            rule(_READ, "networking.k8s.io", "ingresses ingresses/status networkpolicies"),
        ], labels={AGGREGATE_TO + "view": "true"}),
        cluster_role("system:auth-delegator", [
            rule("create", "authentication.k8s.io", "tokenreviews"),
            rule("create", "authorization.k8s.io", "subjectaccessreviews"),
        ]),
        cluster_role("system:basic-user", [
            rule("create", "authorization.k8s.io", "selfsubjectaccessreviews selfsubjectrulesreviews"),
            rule("create", "authentication.k8s.io", "selfsubjectreviews"),
        ]),
        cluster_role("system:certificates.k8s.io:certificatesigningrequests:nodeclient", [
            rule("create", signers, "certificatesigningrequests/nodeclient")]),
        cluster_role("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", [
            rule("create", signers, "certificatesigningrequests/selfnodeclient")]),
        cluster_role("system:certificates.k8s.io:kube-apiserver-client-approver", [
            rule("approve", signers, "signers", names="kubernetes.io/kube-apiserver-client")]),
        cluster_role("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver", [
            rule("approve", signers, "signers", names="kubernetes.io/kube-apiserver-client-kubelet")]),
        cluster_role("system:certificates.k8s.io:kubelet-serving-approver", [
            rule("approve", signers, "signers", names="kubernetes.io/kubelet-serving")]),
        cluster_role("system:certificates.k8s.io:legacy-unknown-approver", [
            rule("approve", signers, "signers", names="kubernetes.io/legacy-unknown")]),
        cluster_role("system:discovery", [
            url_rule("get", "/api /api/* /apis /apis/* /healthz /livez /openapi /openapi/* /readyz /version "
                            "/version/"),
        ]),
        cluster_role("system:heapster", [
            rule(_READ, "core", "events namespaces nodes pods"),
            rule(_READ, "extensions", "deployments"),
        ]),
        cluster_role("system:kube-aggregator", [rule(_READ, "core", "endpoints services")]),
        cluster_role("system:kube-controller-manager", [
            _events(),
            rule("create", "coordination.k8s.io", "leases"),
            rule("get update", "coordination.k8s.io", "leases", names="kube-controller-manager"),
            rule("create", "core", "secrets serviceaccounts"),
            rule("delete", "core", "secrets"),
            rule("get", "core", "configmaps namespaces secrets serviceaccounts"),
            rule("update", "core", "secrets serviceaccounts"),
            rule("create", "authentication.k8s.io", "tokenreviews"),
            rule("create", "authorization.k8s.io", "subjectaccessreviews"),
            rule("list watch", "*", "*"),
            rule("create", "core", "serviceaccounts/token"),
        ]),
        cluster_role("system:kube-dns", [rule("list watch", "core", "endpoints services")]),
        cluster_role("system:kube-scheduler", [
            _events(),
            rule("create", "coordination.k8s.io", "leases"),
            rule("get update", "coordination.k8s.io", "leases", names="kube-scheduler"),
            rule(_READ, "core", "nodes"),
            rule("delete get list watch", "core", "pods"),
            rule("create", "core", "bindings pods/binding"),
            rule("patch update", "core", "pods/status"),
            rule(_READ, "core", "replicationcontrollers services"),
            rule(_READ, "apps extensions", "replicasets"),
            rule(_READ, "apps", "statefulsets"),
            rule(_READ, "policy", "poddisruptionbudgets"),
            rule(_READ, "core", "persistentvolumeclaims persistentvolumes"),
            rule("create", "authentication.k8s.io", "tokenreviews"),
            rule("create", "authorization.k8s.io", "subjectaccessreviews"),
            rule(_READ, "storage.k8s.io", "csinodes"),
            rule(_READ, "core", "namespaces"),
            rule(_READ, "storage.k8s.io", "csidrivers"),
            rule(_READ, "storage.k8s.io", "csistoragecapacities"),
        ]),
        cluster_role("system:kubelet-api-admin", [
            rule(_READ, "core", "nodes"),
            rule("proxy", "core", "nodes"),
            rule("*", "core", "nodes/log nodes/metrics nodes/proxy nodes/stats"),
        ]),
        cluster_role("system:monitoring", [
            url_rule("get", "/healthz /healthz/* /livez /livez/* /metrics /metrics/slis /readyz /readyz/*"),
        ]),
        cluster_role("system:node", copy.deepcopy(NODE_RULES)),
        cluster_role("system:node-bootstrapper", [
            rule("create get list watch", "certificates.k8s.io", "certificatesigningrequests")]),
        cluster_role("system:node-problem-detector", [
            rule("get", "core", "nodes"),
            rule("patch", "core", "nodes/status"),
            _events(),
        ]),
        cluster_role("system:node-proxier", [
            rule("list watch", "core", "endpoints services"),
            rule(_READ, "core", "nodes"),
            _events(),
            rule("list watch", "discovery.k8s.io", "endpointslices"),
        ]),
        cluster_role("system:persistent-volume-provisioner", [
            rule("create delete get list watch", "core", "persistentvolumes"),
            rule("get list update watch", "core", "persistentvolumeclaims"),
            rule(_READ, "storage.k8s.io", "storageclasses"),
            rule("watch", "core", "events"),
            _events(),
        ]),
        cluster_role("system:public-info-viewer", [
            url_rule("get", "/healthz /livez /readyz /version /version/"),
        ]),
        cluster_role("system:service-account-issuer-discovery", [
            url_rule("get", "/.well-known/openid-configuration /openid/v1/jwks"),
        ]),
        cluster_role("system:volume-scheduler", [
            rule("get list patch update watch", "core", "persistentvolumes"),
            rule(_READ, "storage.k8s.io", "storageclasses"),
            rule("get list patch update watch", "core", "persistentvolumeclaims"),
        ]),
    ]


#: The group of kubesim's node adopter (see its binding below).
NODE_ADOPTERS: Final = "kubesim:node-adopters"


def _cluster_role_bindings() -> list[Obj]:
    authenticated = subject("Group", "system:authenticated")
    return [
        cluster_role_binding("cluster-admin", "cluster-admin", [subject("Group", "system:masters")]),
        cluster_role_binding("system:basic-user", "system:basic-user", [authenticated]),
        cluster_role_binding("system:discovery", "system:discovery", [authenticated]),
        cluster_role_binding("system:public-info-viewer", "system:public-info-viewer",
                             [authenticated, subject("Group", "system:unauthenticated")]),
        cluster_role_binding("system:kube-controller-manager", "system:kube-controller-manager",
                             [subject("User", "system:kube-controller-manager")]),
        cluster_role_binding("system:kube-dns", "system:kube-dns", [subject("ServiceAccount", "kube-dns")]),
        cluster_role_binding("system:kube-scheduler", "system:kube-scheduler",
                             [subject("User", "system:kube-scheduler")]),
        cluster_role_binding("system:volume-scheduler", "system:volume-scheduler",
                             [subject("User", "system:kube-scheduler")]),
        cluster_role_binding("system:monitoring", "system:monitoring", [subject("Group", "system:monitoring")]),
        # Nodes get their rules from the Node authorizer; the binding is kept without subjects.
        cluster_role_binding("system:node", "system:node", []),
        cluster_role_binding("system:node-proxier", "system:node-proxier",
                             [subject("User", "system:kube-proxy")]),
        cluster_role_binding("system:service-account-issuer-discovery", "system:service-account-issuer-discovery",
                             [subject("Group", "system:serviceaccounts")]),
        # kubesim's only addition: the simulated kubelets of nodes a study adopts (a snapshot's, a replay's)
        # have no token of their own, so they act as one user with the rules of any node (study-only;
        # kubelet_sim --adopted-nodes-kubeconfig). Kubernetes would bootstrap a certificate per node.
        cluster_role_binding(NODE_ADOPTERS, "system:node", [subject("Group", NODE_ADOPTERS)]),
    ]


# --- the controllers' roles: one ServiceAccount in kube-system per controller ----------------------

def _controller_roles() -> dict[str, list[Obj]]:
    return {
        "attachdetach-controller": [
            rule("list watch", "core", "persistentvolumeclaims persistentvolumes"),
            rule(_READ, "core", "nodes"),
            rule("patch update", "core", "nodes/status"),
            rule("list watch", "core", "pods"),
            _events(),
            rule("create delete get list watch", "storage.k8s.io", "volumeattachments"),
            rule(_READ, "storage.k8s.io", "csidrivers"),
            rule(_READ, "storage.k8s.io", "csinodes"),
        ],
        "certificate-controller": [
            rule("delete get list watch", "certificates.k8s.io", "certificatesigningrequests"),
            rule("update", "certificates.k8s.io",
                 "certificatesigningrequests/approval certificatesigningrequests/status"),
            rule("approve", "certificates.k8s.io", "signers", names="kubernetes.io/kube-apiserver-client-kubelet"),
            rule("sign", "certificates.k8s.io", "signers",
                 names="kubernetes.io/kube-apiserver-client kubernetes.io/kube-apiserver-client-kubelet "
                       "kubernetes.io/kubelet-serving kubernetes.io/legacy-unknown"),
            rule("create", "authorization.k8s.io", "subjectaccessreviews"),
            _events(),
        ],
        "clusterrole-aggregation-controller": [
            rule("escalate get list patch update watch", RBAC_GROUP, "clusterroles"),
        ],
        "cronjob-controller": [
            rule("get list update watch", "batch", "cronjobs"),
            rule("create delete get list patch update watch", "batch", "jobs"),
            rule("update", "batch", "cronjobs/status"),
            rule("update", "batch", "cronjobs/finalizers"),
            rule("delete list watch", "core", "pods"),
            _events(),
        ],
        "daemon-set-controller": [
            rule(_READ, "apps extensions", "daemonsets"),
            rule("update", "apps extensions", "daemonsets/status"),
            rule("update", "apps extensions", "daemonsets/finalizers"),
            rule("list watch", "core", "nodes"),
            rule("create delete list patch watch", "core", "pods"),
            rule("create", "core", "pods/binding"),
            rule("create delete get list patch update watch", "apps", "controllerrevisions"),
            _events(),
        ],
        "deployment-controller": [
            rule("get list update watch", "apps extensions", "deployments"),
            rule("update", "apps extensions", "deployments/status"),
            rule("update", "apps extensions", "deployments/finalizers"),
            rule("create delete get list patch update watch", "apps extensions", "replicasets"),
            rule("get list update watch", "core", "pods"),
            _events(),
        ],
        "disruption-controller": [
            rule(_READ, "apps extensions", "deployments"),
            rule(_READ, "apps extensions", "replicasets"),
            rule(_READ, "core", "replicationcontrollers"),
            rule(_READ, "policy", "poddisruptionbudgets"),
            rule(_READ, "apps", "statefulsets"),
            rule("update", "policy", "poddisruptionbudgets/status"),
            rule("patch update", "core", "pods/status"),
            rule("get", "*", "*/scale"),
            _events(),
        ],
        "endpoint-controller": [
            rule(_READ, "core", "pods services"),
            rule("create delete get list update watch", "core", "endpoints"),
            rule("create", "core", "endpoints/restricted"),
            _events(),
        ],
        "endpointslice-controller": [
            rule(_READ, "core", "nodes pods services"),
            rule("update", "core", "services/finalizers"),
            rule("create delete get list update watch", "discovery.k8s.io", "endpointslices"),
            _events(),
        ],
        "endpointslicemirroring-controller": [
            rule(_READ, "core", "endpoints services"),
            rule("update", "core", "services/finalizers"),
            rule("update", "core", "endpoints/finalizers"),
            rule("create delete get list update watch", "discovery.k8s.io", "endpointslices"),
            _events(),
        ],
        "ephemeral-volume-controller": [
            rule(_READ, "core", "pods"),
            rule("update", "core", "pods/finalizers"),
            rule("create get list watch", "core", "persistentvolumeclaims"),
            _events(),
        ],
        "expand-controller": [
            rule("get list patch update watch", "core", "persistentvolumes"),
            rule("patch update", "core", "persistentvolumeclaims/status"),
            rule(_READ, "core", "persistentvolumeclaims"),
            _events(),
        ],
        "generic-garbage-collector": [
            rule("delete get list patch update watch", "*", "*"),
            _events(),
        ],
        "horizontal-pod-autoscaler": [
            rule(_READ, "autoscaling", "horizontalpodautoscalers"),
            rule("update", "autoscaling", "horizontalpodautoscalers/status"),
            rule("get update", "*", "*/scale"),
            rule("list watch", "core", "pods"),
            rule("list watch", "metrics.k8s.io", "pods"),
            rule(_READ, "custom.metrics.k8s.io", "*"),
            rule(_READ, "external.metrics.k8s.io", "*"),
            _events(),
        ],
        "job-controller": [
            rule("get list patch update watch", "batch", "jobs"),
            rule("update", "batch", "jobs/status"),
            rule("update", "batch", "jobs/finalizers"),
            rule("create delete list patch watch", "core", "pods"),
            _events(),
        ],
        "legacy-service-account-token-cleaner": [
            rule("get", "core", "configmaps", names="kube-apiserver-legacy-service-account-token-tracking"),
            rule("delete patch", "core", "secrets"),
        ],
        "namespace-controller": [
            rule("delete get list watch", "core", "namespaces"),
            rule("update", "core", "namespaces/finalize namespaces/status"),
            rule("delete deletecollection get list watch", "*", "*"),
        ],
        "node-controller": [
            rule("delete get list patch update watch", "core", "nodes"),
            rule("patch update", "core", "nodes/status"),
            rule("patch update", "core", "pods/status"),
            rule("delete get list watch", "core", "pods"),
            _events(),
        ],
        "persistent-volume-binder": [
            rule("create delete get list update watch", "core", "persistentvolumes"),
            rule("update", "core", "persistentvolumes/status"),
            rule("get list update watch", "core", "persistentvolumeclaims"),
            rule("update", "core", "persistentvolumeclaims/status"),
            rule("create delete get list watch", "core", "pods"),
            rule(_READ, "storage.k8s.io", "storageclasses"),
            rule("list watch", "core", "nodes"),
            _events(),
            rule("watch", "core", "events"),
        ],
        "pod-garbage-collector": [
            rule("delete list watch", "core", "pods"),
            rule(_READ, "core", "nodes"),
            rule("patch", "core", "pods/status"),
        ],
        "pv-protection-controller": [
            rule("get list update watch", "core", "persistentvolumes"),
            _events(),
        ],
        "pvc-protection-controller": [
            rule("get list update watch", "core", "persistentvolumeclaims"),
            rule("update", "core", "persistentvolumeclaims/status"),
            rule(_READ, "core", "pods"),
            _events(),
        ],
        "replicaset-controller": [
            rule("get list update watch", "apps extensions", "replicasets"),
            rule("update", "apps extensions", "replicasets/status"),
            rule("update", "apps extensions", "replicasets/finalizers"),
            rule("create delete list patch watch", "core", "pods"),
            _events(),
        ],
        "replication-controller": [
            rule("get list update watch", "core", "replicationcontrollers"),
            rule("update", "core", "replicationcontrollers/status"),
            rule("update", "core", "replicationcontrollers/finalizers"),
            rule("create delete list patch watch", "core", "pods"),
            _events(),
        ],
        "resourcequota-controller": [
            rule("list watch", "*", "*"),
            rule("update", "core", "resourcequotas/status"),
            _events(),
        ],
        "root-ca-cert-publisher": [
            rule("create update", "core", "configmaps"),
            _events(),
        ],
        "route-controller": [
            rule("list watch", "core", "nodes"),
            rule("patch", "core", "nodes/status"),
            _events(),
        ],
        "service-account-controller": [
            rule("create", "core", "serviceaccounts"),
            _events(),
        ],
        "service-controller": [
            rule(_READ, "core", "services"),
            rule("patch update", "core", "services/status"),
            rule("list watch", "core", "nodes"),
            _events(),
        ],
        "statefulset-controller": [
            rule("list watch", "core", "pods"),
            rule(_READ, "apps", "statefulsets"),
            rule("update", "apps", "statefulsets/status"),
            rule("update", "apps", "statefulsets/finalizers"),
            rule("create delete get patch update", "core", "pods"),
            rule("create delete get list patch update watch", "apps", "controllerrevisions"),
            rule("create get list watch", "core", "persistentvolumeclaims"),
            rule("delete update", "core", "persistentvolumeclaims"),
            rule("update", "core", "pods/finalizers"),
            _events(),
        ],
        "ttl-after-finished-controller": [
            rule("delete get list watch", "batch", "jobs"),
            _events(),
        ],
        "ttl-controller": [
            rule("list patch update watch", "core", "nodes"),
            _events(),
        ],
        "validatingadmissionpolicy-status-controller": [
            rule(_READ, "admissionregistration.k8s.io", "validatingadmissionpolicies"),
            rule("get patch update", "admissionregistration.k8s.io", "validatingadmissionpolicies/status"),
            _events(),
        ],
    }


#: kubesim's Role that lets the scheduler read its run-time configuration ConfigMap.
SCHEDULER_CONFIG_READER: Final = "kubesim:scheduler-config-reader"


def _namespace_policy() -> tuple[list[Obj], list[Obj]]:
    """(Roles, RoleBindings) in kube-system and kube-public."""
    def role(namespace: str, name: str, rules: list[Obj]) -> Obj:
        return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "Role", "metadata": _meta(name, namespace=namespace),
                "rules": rules}

    def binding(namespace: str, name: str, role_name: str, subjects: list[Obj]) -> Obj:
        return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "RoleBinding",
                "metadata": _meta(name, namespace=namespace),
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": role_name}, "subjects": subjects}

    leader_locking = [rule("create get list update watch", "coordination.k8s.io", "leases")]
    roles = [
        role("kube-public", "system:controller:bootstrap-signer", [
            rule(_READ, "core", "configmaps"),
            rule("update", "core", "configmaps", names="cluster-info"),
            _events(),
        ]),
        role("kube-system", "extension-apiserver-authentication-reader", [
            rule(_READ, "core", "configmaps", names="extension-apiserver-authentication")]),
        role("kube-system", "system::leader-locking-kube-controller-manager", copy.deepcopy(leader_locking)),
        role("kube-system", "system::leader-locking-kube-scheduler", copy.deepcopy(leader_locking)),
        role("kube-system", "system:controller:bootstrap-signer", [rule(_READ, "core", "secrets")]),
        role("kube-system", "system:controller:cloud-provider", [rule("create get list watch", "core", "configmaps")]),
        role("kube-system", "system:controller:token-cleaner", [rule("delete get list watch", "core", "secrets"),
                                                                _events()]),
        # kubesim's addition: the scheduler reloads its configuration from this one ConfigMap (see
        # scheduler/reload.py's CONFIGMAP_NAME); Kubernetes' scheduler reads only its file.
        role("kube-system", SCHEDULER_CONFIG_READER, [rule(_READ, "core", "configmaps",
                                                           names="kubesim-scheduler-config")]),
    ]
    bindings = [
        binding("kube-public", "system:controller:bootstrap-signer", "system:controller:bootstrap-signer",
                [subject("ServiceAccount", "bootstrap-signer")]),
        binding("kube-system", "system::extension-apiserver-authentication-reader",
                "extension-apiserver-authentication-reader",
                [subject("User", "system:kube-controller-manager"), subject("User", "system:kube-scheduler")]),
        binding("kube-system", "system::leader-locking-kube-controller-manager",
                "system::leader-locking-kube-controller-manager",
                [subject("User", "system:kube-controller-manager"),
                 subject("ServiceAccount", "kube-controller-manager"),
                 subject("ServiceAccount", "leader-election-controller")]),
        binding("kube-system", "system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler",
                [subject("User", "system:kube-scheduler"), subject("ServiceAccount", "kube-scheduler")]),
        binding("kube-system", "system:controller:bootstrap-signer", "system:controller:bootstrap-signer",
                [subject("ServiceAccount", "bootstrap-signer")]),
        binding("kube-system", "system:controller:cloud-provider", "system:controller:cloud-provider",
                [subject("ServiceAccount", "cloud-provider")]),
        binding("kube-system", "system:controller:token-cleaner", "system:controller:token-cleaner",
                [subject("ServiceAccount", "token-cleaner")]),
        binding("kube-system", SCHEDULER_CONFIG_READER, SCHEDULER_CONFIG_READER,
                [subject("User", "system:kube-scheduler")]),
    ]
    return roles, bindings


#: The controllers' ServiceAccount names (``kube-system/<name>``), in Kubernetes' order.
CONTROLLER_SERVICE_ACCOUNTS: Final = tuple(_controller_roles())

_CONTROLLER_ROLES: Final = [cluster_role(CONTROLLER_PREFIX + name, rules)
                            for name, rules in _controller_roles().items()]
_CONTROLLER_BINDINGS: Final = [cluster_role_binding(CONTROLLER_PREFIX + name, CONTROLLER_PREFIX + name,
                                                    [subject("ServiceAccount", name)])
                               for name in CONTROLLER_SERVICE_ACCOUNTS]
_ROLES, _ROLE_BINDINGS = _namespace_policy()
_CLUSTER_ROLES: Final = [*_cluster_roles(), *_CONTROLLER_ROLES]
_CLUSTER_ROLE_BINDINGS: Final = [*_cluster_role_bindings(), *_CONTROLLER_BINDINGS]


def cluster_roles() -> list[Obj]:
    return copy.deepcopy(_CLUSTER_ROLES)


def cluster_role_bindings() -> list[Obj]:
    return copy.deepcopy(_CLUSTER_ROLE_BINDINGS)


def namespace_roles() -> list[Obj]:
    return copy.deepcopy(_ROLES)


def namespace_role_bindings() -> list[Obj]:
    return copy.deepcopy(_ROLE_BINDINGS)
