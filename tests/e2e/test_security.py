"""Security on a whole cluster: RBAC as users meet it, kubelets' limits, tokens, impersonation and audit.

Every component here runs under its own identity (see ``conftest.py``): the
controller-manager's controllers as their ServiceAccounts (the
clusterrole-aggregation controller fills ``view``), each node as
``system:node:<name>``. Users are client certificates the test CA signs.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from tests import harness
from tests.kube import is_ready
from tests.kubectl import Kubectl, binary

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

RBAC = "/apis/rbac.authorization.k8s.io/v1"


def role_binding(namespace: str, name: str, role_kind: str, role: str, user: str) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}


def pod(name: str, node: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx:1.25"}], **spec}}


def wait_view_aggregated(api: httpx.Client) -> None:
    """The clusterrole-aggregation controller has filled ``view`` (it runs as its ServiceAccount)."""
    harness.wait_for(lambda: api.get(f"{RBAC}/clusterroles/view").json().get("rules"), timeout=30,
                     message="view's aggregated rules")


@pytest.fixture
def jane(cluster: harness.Cluster, api: httpx.Client, namespace: str) -> Iterator[httpx.Client]:
    """A user bound to ``view`` in the test's namespace, and nothing else."""
    wait_view_aggregated(api)
    r = api.post(f"{RBAC}/namespaces/{namespace}/rolebindings",
                 json=role_binding(namespace, "jane-view", "ClusterRole", "view", "jane"))
    assert r.status_code == 201, r.text
    wait_authorized(api, "jane", namespace, "list", "", "pods")
    with harness.user_client(cluster.url, "jane", timeout=30) as client:
        yield client


def wait_authorized(api: httpx.Client, user: str, namespace: str, verb: str, group: str, resource: str,
                    name: str = "") -> None:
    """Until the authorizer's caches hold a binding just made (eventually, as Kubernetes' e2e tests wait for an
    authorization update with a SubjectAccessReview)."""
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": user, "groups": ["system:authenticated"],
                       "resourceAttributes": {"namespace": namespace, "verb": verb, "group": group,
                                              "resource": resource, "name": name}}}
    harness.wait_for(lambda: api.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", json=review)
                     .json()["status"].get("allowed"), timeout=30, message=f"{user} to be allowed to {verb} {resource}")


def forbidden(r: httpx.Response) -> str:
    assert r.status_code == 403, r.text
    body = r.json()
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "Forbidden", 403)
    return str(body["message"])


def test_a_view_user_reads_but_cannot_write_exec_read_secrets_or_escalate(
        api: httpx.Client, jane: httpx.Client, namespace: str) -> None:
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("web", "node-1")).status_code == 201
    assert jane.get(f"/api/v1/namespaces/{namespace}/pods").status_code == 200
    assert jane.get(f"/api/v1/namespaces/{namespace}/pods/web/log").status_code in (200, 400)
    assert forbidden(jane.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("mine", "node-1"))) == (
        f'pods is forbidden: User "jane" cannot create resource "pods" in API group "" in the namespace '
        f'"{namespace}"')
    assert forbidden(jane.post(f"/api/v1/namespaces/{namespace}/pods/web/exec?command=sh")) == (
        f'pods "web" is forbidden: User "jane" cannot create resource "pods/exec" in API group "" in the '
        f'namespace "{namespace}"')
    assert forbidden(jane.get(f"/api/v1/namespaces/{namespace}/secrets")) == (
        f'secrets is forbidden: User "jane" cannot list resource "secrets" in API group "" in the namespace '
        f'"{namespace}"')
    assert forbidden(jane.get("/api/v1/nodes")) == (
        'nodes is forbidden: User "jane" cannot list resource "nodes" in API group "" at the cluster scope')
    # She may not grant herself edit: she holds neither bind on it nor its permissions.
    r = jane.post(f"{RBAC}/namespaces/{namespace}/rolebindings",
                  json=role_binding(namespace, "jane-edit", "ClusterRole", "edit", "jane"))
    message = forbidden(r)
    assert message.startswith('rolebindings.rbac.authorization.k8s.io is forbidden: User "jane" cannot create '
                              'resource "rolebindings"'), message


def test_escalation_prevention_with_the_right_to_write_rbac(cluster: harness.Cluster, api: httpx.Client,
                                                            namespace: str) -> None:
    """A user who may write Roles and RoleBindings still cannot grant more than she holds."""
    wait_view_aggregated(api)
    writer = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
              "metadata": {"name": "rbac-writer", "namespace": namespace},
              "rules": [{"verbs": ["create", "update", "get"], "apiGroups": ["rbac.authorization.k8s.io"],
                         "resources": ["roles", "rolebindings"]},
                        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]}
    assert api.post(f"{RBAC}/namespaces/{namespace}/roles", json=writer).status_code == 201
    assert api.post(f"{RBAC}/namespaces/{namespace}/rolebindings",
                    json=role_binding(namespace, "ann-writes", "Role", "rbac-writer", "ann")).status_code == 201
    wait_authorized(api, "ann", namespace, "create", "rbac.authorization.k8s.io", "roles")
    with harness.user_client(cluster.url, "ann", timeout=30) as ann:
        bigger = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                  "metadata": {"name": "pod-maker", "namespace": namespace},
                  "rules": [{"verbs": ["create", "get"], "apiGroups": [""], "resources": ["pods"]}]}
        assert forbidden(ann.post(f"{RBAC}/namespaces/{namespace}/roles", json=bigger)) == (
            'roles.rbac.authorization.k8s.io "pod-maker" is forbidden: user "ann" '
            '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
            '{APIGroups:[""], Resources:["pods"], Verbs:["create"]}')
        assert forbidden(ann.post(f"{RBAC}/namespaces/{namespace}/rolebindings",
                                  json=role_binding(namespace, "ann-admin", "ClusterRole", "admin", "ann"))) \
            .startswith('rolebindings.rbac.authorization.k8s.io "ann-admin" is forbidden: user "ann" '
                        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:')
        # What she holds she may grant.
        smaller = {**bigger, "metadata": {"name": "pod-reader", "namespace": namespace},
                   "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}
        assert ann.post(f"{RBAC}/namespaces/{namespace}/roles", json=smaller).status_code == 201
        assert ann.post(f"{RBAC}/namespaces/{namespace}/rolebindings",
                        json=role_binding(namespace, "bo-reads", "Role", "pod-reader", "bo")).status_code == 201


def test_bind_and_escalate_let_a_user_grant_what_she_does_not_hold(cluster: harness.Cluster, api: httpx.Client,
                                                                   namespace: str) -> None:
    """``bind`` on a named ClusterRole lets a binding name it; ``escalate`` lets an existing Role be widened."""
    wait_view_aggregated(api)
    delegate = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "delegate", "namespace": namespace},
                "rules": [{"verbs": ["create", "update", "get"], "apiGroups": ["rbac.authorization.k8s.io"],
                           "resources": ["roles", "rolebindings"]},
                          {"verbs": ["bind"], "apiGroups": ["rbac.authorization.k8s.io"],
                           "resources": ["clusterroles"], "resourceNames": ["edit"]},
                          {"verbs": ["escalate"], "apiGroups": ["rbac.authorization.k8s.io"],
                           "resources": ["roles"], "resourceNames": ["widened", "fresh"]}]}
    assert api.post(f"{RBAC}/namespaces/{namespace}/roles", json=delegate).status_code == 201
    assert api.post(f"{RBAC}/namespaces/{namespace}/rolebindings",
                    json=role_binding(namespace, "kim-delegates", "Role", "delegate", "kim")).status_code == 201
    wait_authorized(api, "kim", namespace, "create", "rbac.authorization.k8s.io", "rolebindings")
    narrow = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
              "metadata": {"name": "widened", "namespace": namespace},
              "rules": [{"verbs": ["get"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"]}]}
    assert api.post(f"{RBAC}/namespaces/{namespace}/roles", json=narrow).status_code == 201
    pods = [{"verbs": ["create", "delete"], "apiGroups": [""], "resources": ["pods"]}]
    with harness.user_client(cluster.url, "kim", timeout=30) as kim:
        # She holds none of edit's permissions, but may bind edit (and only edit).
        assert kim.post(f"{RBAC}/namespaces/{namespace}/rolebindings",
                        json=role_binding(namespace, "bo-edits", "ClusterRole", "edit", "bo")).status_code == 201
        assert "is attempting to grant RBAC permissions not currently held" in forbidden(kim.post(
            f"{RBAC}/namespaces/{namespace}/rolebindings",
            json=role_binding(namespace, "bo-admins", "ClusterRole", "admin", "bo")))
        # escalate names "widened" and "fresh": she may widen the existing one, but creating "fresh" is
        # judged on what she holds, as a create (a POST to the collection) has no name to match in Kubernetes.
        current = kim.get(f"{RBAC}/namespaces/{namespace}/roles/widened").json()
        assert kim.put(f"{RBAC}/namespaces/{namespace}/roles/widened",
                       json={**current, "rules": pods}).status_code == 200
        assert forbidden(kim.post(f"{RBAC}/namespaces/{namespace}/roles", json={
            **narrow, "metadata": {"name": "fresh", "namespace": namespace}, "rules": pods})).startswith(
            'roles.rbac.authorization.k8s.io "fresh" is forbidden: user "kim" (groups=["system:authenticated"]) '
            "is attempting to grant RBAC permissions not currently held:")
    # bo got edit through kim's binding, once the authorizer's caches hold it (eventually, as Kubernetes' e2e
    # tests wait for an authorization update).
    with harness.user_client(cluster.url, "bo", timeout=30) as bo:
        harness.wait_for(lambda: bo.post(f"/api/v1/namespaces/{namespace}/configmaps",
                                         json={"metadata": {"name": "by-bo"}}).status_code == 201,
                         timeout=10, message="bo's binding to take effect")


def test_impersonation_as_rbac_grants_it(cluster: harness.Cluster, api: httpx.Client, namespace: str) -> None:
    """``impersonate`` on users and groups, restricted by resourceNames, is all that is allowed."""
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": f"impersonate-{namespace}"},
            "rules": [{"verbs": ["impersonate"], "apiGroups": [""], "resources": ["users"], "resourceNames": ["bob"]},
                      {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["groups"],
                       "resourceNames": ["dev"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": f"ivy-impersonates-{namespace}"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": f"impersonate-{namespace}"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "ivy"}]}
    assert api.post(f"{RBAC}/clusterroles", json=role).status_code == 201
    assert api.post(f"{RBAC}/clusterrolebindings", json=binding).status_code == 201
    wait_authorized(api, "ivy", "", "impersonate", "", "groups", name="dev")
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    try:
        with harness.user_client(cluster.url, "ivy", timeout=30) as ivy:
            as_bob = ivy.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", json=review,
                              headers={"Impersonate-User": "bob", "Impersonate-Group": "dev"})
            assert as_bob.status_code == 201, as_bob.text
            assert as_bob.json()["status"]["userInfo"] == {"username": "bob",
                                                           "groups": ["dev", "system:authenticated"]}
            assert forbidden(ivy.get("/version", headers={"Impersonate-User": "carol"})) == (
                'users "carol" is forbidden: User "ivy" cannot impersonate resource "users" in API group "" at the '
                "cluster scope")
            assert forbidden(ivy.get("/version", headers={"Impersonate-User": "bob",
                                                          "Impersonate-Group": "system:masters"})) == (
                'groups "system:masters" is forbidden: User "ivy" cannot impersonate resource "groups" in API group '
                '"" at the cluster scope')
    finally:
        api.delete(f"{RBAC}/clusterrolebindings/ivy-impersonates-{namespace}")
        api.delete(f"{RBAC}/clusterroles/impersonate-{namespace}")


CHECKS = [("list", "pods", "GET", "pods"), ("get", "pods", "GET", "pods/web"), ("create", "pods", "POST", "pods"),
          ("delete", "pods", "DELETE", "pods/web"), ("list", "secrets", "GET", "secrets"),
          ("list", "configmaps", "GET", "configmaps"), ("create", "pods/exec", "POST", "pods/web/exec"),
          ("list", "deployments.apps", "GET", "apps")]


@pytest.mark.kubectl
def test_kubectl_auth_can_i_agrees_with_the_requests(cluster: harness.Cluster, api: httpx.Client,
                                                     jane: httpx.Client, namespace: str,
                                                     kubectl: Kubectl) -> None:
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("web", "node-2")).status_code == 201
    for verb, resource, method, path in CHECKS:
        said = kubectl.run("auth", "can-i", verb, resource, "--as", "jane", check=False).stdout.strip()
        url = (f"/apis/apps/v1/namespaces/{namespace}/deployments" if path == "apps"
               else f"/api/v1/namespaces/{namespace}/{path}")
        body = pod("other", "node-2") if method == "POST" and resource == "pods" else None
        got = jane.request(method, url, json=body)
        assert said == ("yes" if got.status_code != 403 else "no"), (verb, resource, said, got.status_code)
    listed = kubectl("auth", "can-i", "--list", "--as", "jane")
    rows = {line.split()[0]: line for line in listed.splitlines()[1:] if line.strip() and not line.startswith(" ")}
    assert "[get list watch]" in rows["pods"]
    assert "secrets" not in rows
    whoami = Kubectl(binary("1.32"), cluster.user_kubeconfig("jane", ("dev",)), kubectl.home)("auth", "whoami")
    assert "jane" in whoami and "[dev system:authenticated]" in whoami


def test_impersonation_only_for_those_allowed(cluster: harness.Cluster, api: httpx.Client, jane: httpx.Client,
                                              namespace: str) -> None:
    assert forbidden(jane.get(f"/api/v1/namespaces/{namespace}/pods", headers={"Impersonate-User": "bob"})) == (
        'users "bob" is forbidden: User "jane" cannot impersonate resource "users" in API group "" at the '
        "cluster scope")
    assert forbidden(api.get(f"/api/v1/namespaces/{namespace}/pods",
                             headers={"Impersonate-User": "bob", "Impersonate-Group": "dev"})).startswith(
        'pods is forbidden: User "bob" cannot list resource "pods"')
    review = api.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                      json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                      headers={"Impersonate-User": "jane"}).json()["status"]["userInfo"]
    assert review == {"username": "jane", "groups": ["system:authenticated"]}
    assert api.get(f"/api/v1/namespaces/{namespace}/pods", headers={"Impersonate-User": "jane"}).status_code == 200
    r = api.get("/api/v1/pods", headers={"Impersonate-Group": "dev"})
    assert r.status_code == 500 and "without impersonating a user" in r.json()["message"]


def test_a_kubelet_touches_only_its_own_node_lease_and_pods(api: httpx.Client, cluster: harness.Cluster,
                                                            namespace: str) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "used"}, "stringData": {"k": "v"}}
    assert api.post(f"/api/v1/namespaces/{namespace}/secrets", json=secret).status_code == 201
    other = {**secret, "metadata": {"name": "unused"}}
    assert api.post(f"/api/v1/namespaces/{namespace}/secrets", json=other).status_code == 201
    mounted = pod("mounted", "node-1", volumes=[{"name": "s", "secret": {"secretName": "used"}}])
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=mounted).status_code == 201
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("elsewhere", "node-2")).status_code == 201
    merge = {"Content-Type": "application/merge-patch+json"}
    with harness.token_client(cluster.url, harness.node_token("node-1"), timeout=30) as kubelet:
        assert kubelet.get(f"/api/v1/namespaces/{namespace}/secrets/used").status_code == 200
        assert forbidden(kubelet.get(f"/api/v1/namespaces/{namespace}/secrets/unused")) == (
            f'secrets "unused" is forbidden: User "system:node:node-1" cannot get resource "secrets" in API group '
            f'"" in the namespace "{namespace}": no relationship found between node \'node-1\' and this object')
        assert forbidden(kubelet.patch("/api/v1/nodes/node-2/status", headers=merge,
                                       content=b'{"metadata":{"labels":{"x":"y"}}}')) == (
            'nodes "node-2" is forbidden: node "node-1" is not allowed to modify node "node-2"')
        lease = kubelet.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-1")
        assert lease.status_code == 200
        assert forbidden(kubelet.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-2")) \
            .endswith("can only access node lease with the same name as the requesting node")
        assert forbidden(kubelet.patch(f"/api/v1/namespaces/{namespace}/pods/elsewhere/status", headers=merge,
                                       content=b'{"status":{"phase":"Failed"}}')).endswith(
            'node "node-1" can only update pod status for pods with spec.nodeName set to itself')
        assert forbidden(kubelet.delete(f"/api/v1/namespaces/{namespace}/pods/elsewhere")).endswith(
            'node "node-1" can only delete pods with spec.nodeName set to itself')
        assert "can only create mirror pods" in forbidden(
            kubelet.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("sneaky", "node-1")))
        assert forbidden(kubelet.patch("/api/v1/nodes/node-1", headers=merge, content=orjson.dumps(
            {"metadata": {"labels": {"node-restriction.kubernetes.io/pool": "gold"}}}))).endswith(
            "is not allowed to modify labels: node-restriction.kubernetes.io/pool")


@pytest.mark.kubectl
def test_a_service_account_token_stops_working_when_its_pod_is_deleted(
        cluster: harness.Cluster, api: httpx.Client, namespace: str, kubectl: Kubectl) -> None:
    assert api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                    json={"metadata": {"name": "robot"}}).status_code == 201
    assert api.post(f"/api/v1/namespaces/{namespace}/pods",
                    json=pod("bearer", "node-3", serviceAccountName="robot")).status_code == 201
    harness.wait_for(lambda: is_ready(api.get(f"/api/v1/namespaces/{namespace}/pods/bearer").json()), timeout=30,
                     message="the Pod running")
    token = kubectl("create", "token", "robot", "--bound-object-kind", "Pod", "--bound-object-name",
                    "bearer").strip()
    with harness.token_client(cluster.url, token) as robot:
        info = robot.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                          json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        assert info.json()["status"]["userInfo"]["username"] == f"system:serviceaccount:{namespace}:robot"
        assert info.json()["status"]["userInfo"]["extra"]["authentication.kubernetes.io/pod-name"] == ["bearer"]
        assert api.delete(f"/api/v1/namespaces/{namespace}/pods/bearer",
                          params={"gracePeriodSeconds": "0"}).status_code == 200
        harness.wait_for(lambda: api.get(f"/api/v1/namespaces/{namespace}/pods/bearer").status_code == 404,
                         message="the Pod gone")
        harness.wait_for(lambda: robot.get("/version").status_code == 401, timeout=10,
                         message="the token refused")


def test_a_pods_projected_token_is_its_service_accounts_and_goes_with_it(
        cluster: harness.Cluster, api: httpx.Client, namespace: str, kubectl: Kubectl) -> None:
    # ServiceAccount admission gives the Pod its kube-api-access volume; the kubelet asks for the token
    # (as its node, bound to the Pod) and mounts it where client libraries look for it.
    assert api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                    json={"metadata": {"name": "robot"}}).status_code == 201
    assert api.post(f"/api/v1/namespaces/{namespace}/pods",
                    json=pod("mounted", "node-2", serviceAccountName="robot")).status_code == 201
    harness.wait_for(lambda: is_ready(api.get(f"/api/v1/namespaces/{namespace}/pods/mounted").json()), timeout=30,
                     message="the Pod running")
    directory = "/var/run/secrets/kubernetes.io/serviceaccount"
    token = kubectl("exec", "mounted", "--", "cat", f"{directory}/token").strip()
    assert kubectl("exec", "mounted", "--", "cat", f"{directory}/namespace") == namespace
    assert "BEGIN CERTIFICATE" in kubectl("exec", "mounted", "--", "cat", f"{directory}/ca.crt")
    # Kubernetes' safe transition: the 3607 s the volume asks for is valid for a year, warning after 3607 s.
    claims = orjson.loads(_jwt_payload(token))
    assert claims["exp"] - claims["iat"] == 365 * 24 * 3600
    assert claims["kubernetes.io"]["warnafter"] - claims["iat"] == 3607
    assert claims["kubernetes.io"]["pod"]["name"] == "mounted"
    assert claims["kubernetes.io"]["node"]["name"] == "node-2"
    with harness.token_client(cluster.url, token) as robot:
        info = robot.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                          json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        user = info.json()["status"]["userInfo"]
        assert user["username"] == f"system:serviceaccount:{namespace}:robot"
        assert user["extra"]["authentication.kubernetes.io/pod-name"] == ["mounted"]
        assert user["extra"]["authentication.kubernetes.io/node-name"] == ["node-2"]
        assert api.delete(f"/api/v1/namespaces/{namespace}/pods/mounted",
                          params={"gracePeriodSeconds": "0"}).status_code == 200
        harness.wait_for(lambda: api.get(f"/api/v1/namespaces/{namespace}/pods/mounted").status_code == 404,
                         message="the Pod gone")
        harness.wait_for(lambda: robot.get("/version").status_code == 401, timeout=10,
                         message="the token refused")


def _jwt_payload(token: str) -> bytes:
    payload = token.split(".")[1]
    return base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))


def test_components_act_under_their_own_identities(cluster: harness.Cluster, api: httpx.Client,
                                                   namespace: str) -> None:
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
          "spec": {"replicas": 1, "selector": {"app": "web"}, "template": {
              "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    assert api.post(f"/api/v1/namespaces/{namespace}/replicationcontrollers", json=rc).status_code == 201

    def users() -> set[str]:
        seen = set()
        for line in cluster.audit_log.read_bytes().splitlines():
            event = orjson.loads(line)
            if (event.get("objectRef") or {}).get("namespace") == namespace:
                seen.add(event["user"].get("username"))
        return seen
    wanted = {"system:serviceaccount:kube-system:replication-controller", "system:kube-scheduler"}
    harness.wait_for(lambda: wanted <= users(), timeout=30, message="the controllers' and scheduler's writes")
    harness.wait_for(lambda: any(u.startswith("system:node:") for u in users()), timeout=30,
                     message="a kubelet's status write")


def test_audit_records_each_request_at_metadata_level(cluster: harness.Cluster, jane: httpx.Client,
                                                      namespace: str) -> None:
    marker = f"audited-{uuid.uuid4().hex[:6]}"
    jane.post(f"/api/v1/namespaces/{namespace}/configmaps", params={"fieldManager": marker},
              json={"metadata": {"name": marker}})
    with harness.token_client(cluster.url, "garbage") as garbage:
        assert garbage.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector={marker}").status_code == 401
    with harness.admin_client(cluster.url) as admin:
        admin.get(f"/api/v1/namespaces/{namespace}/pods", params={"labelSelector": f"as={marker}"},
                  headers={"Impersonate-User": "jane"})
        admin.post(f"/api/v1/namespaces/{namespace}/configmaps", params={"fieldManager": marker},
                   json={"metadata": {"name": marker}})

    def events() -> list[dict[str, Any]]:
        out = []
        for line in cluster.audit_log.read_bytes().splitlines():
            event = orjson.loads(line)
            if marker in event.get("requestURI", "") or (event.get("objectRef") or {}).get("name") == marker:
                out.append(event)
        return out
    found = harness.wait_for(lambda: len(events()) >= 4 and events(), message="four audit events")
    assert isinstance(found, list)
    by_code = {e["responseStatus"]["code"]: e for e in found}
    refused = by_code[403]
    assert (refused["kind"], refused["apiVersion"], refused["level"], refused["stage"]) == (
        "Event", "audit.k8s.io/v1", "Metadata", "ResponseComplete")
    assert refused["user"]["username"] == "jane" and refused["verb"] == "create"
    # Refused before its body was read, as in Kubernetes: the object's name is not known.
    assert refused["objectRef"] == {"resource": "configmaps", "namespace": namespace, "apiVersion": "v1"}
    assert refused["annotations"]["authorization.k8s.io/decision"] == "forbid"
    assert refused["responseStatus"]["reason"] == "Forbidden" and "requestObject" not in refused
    unauthorized = by_code[401]
    assert unauthorized["user"] == {} and unauthorized["stage"] == "ResponseStarted"
    impersonated = by_code[200]
    assert impersonated["user"]["username"] == "kubernetes-admin"
    assert impersonated["impersonatedUser"] == {"username": "jane", "groups": ["system:authenticated"]}
    assert impersonated["annotations"]["authorization.k8s.io/decision"] == "allow"
    created = by_code[201]
    assert created["objectRef"]["name"] == marker and created["verb"] == "create"
    assert all(e["stage"] != "RequestReceived" for e in found)


def test_labelled_cluster_roles_aggregate_into_view(cluster: harness.Cluster, api: httpx.Client,
                                                    jane: httpx.Client, namespace: str) -> None:
    name = f"widget-viewer-{uuid.uuid4().hex[:6]}"
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
            "rules": [{"verbs": ["get"], "apiGroups": ["example.com"], "resources": [name]}]}
    assert api.post(f"{RBAC}/clusterroles", json=role).status_code == 201
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"namespace": namespace, "verb": "get", "group": "example.com",
                                              "resource": name}}}
    try:
        harness.wait_for(lambda: jane.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                                           json=review).json()["status"]["allowed"], timeout=30,
                         message="the aggregated rule to reach view")
        view = api.get(f"{RBAC}/clusterroles/view").json()
        assert role["rules"][0] in view["rules"]
    finally:
        api.delete(f"{RBAC}/clusterroles/{name}")


def _running_pod(api: httpx.Client, namespace: str, name: str) -> None:
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod(name, "node-1")).status_code == 201
    harness.wait_for(lambda: api.get(f"/api/v1/namespaces/{namespace}/pods/{name}").json()
                     .get("status", {}).get("phase") == "Running", timeout=30, message=f"{name} running")


def test_a_websocket_exec_needs_create_though_its_handshake_is_a_get(cluster: harness.Cluster, api: httpx.Client,
                                                                     namespace: str) -> None:
    """An upgraded exec goes through authentication (its TLS client certificate) and authorization before
    it is relayed: ``get`` on pods/exec is not enough for a WebSocket's GET, ``create`` is needed too."""
    import asyncio

    from machinery.httpstream.client import UpgradeFailed, exec_websocket

    _running_pod(api, namespace, "web")
    rules: dict[str, list[str]] = {"getter": ["get"], "creator": ["get", "create"]}
    for user, verbs in rules.items():
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": f"exec-{user}", "namespace": namespace},
                "rules": [{"apiGroups": [""], "resources": ["pods/exec"], "verbs": verbs}]}
        assert api.post(f"{RBAC}/namespaces/{namespace}/roles", json=role).status_code == 201
        assert api.post(f"{RBAC}/namespaces/{namespace}/rolebindings",
                        json=role_binding(namespace, f"exec-{user}", "Role", f"exec-{user}", user)).status_code == 201
    url = (f"{cluster.url}/api/v1/namespaces/{namespace}/pods/web/exec?command=echo&command=hi"
           "&stdout=true&stderr=true")
    with pytest.raises(UpgradeFailed) as refused:
        asyncio.run(exec_websocket(url, tls=harness.user_tls("getter")))
    assert refused.value.code == 403
    status = refused.value.status()
    assert status is not None and status["message"] == (
        f'pods "web" is forbidden: User "getter" cannot create resource "pods/exec" in API group "" in the '
        f'namespace "{namespace}"')
    # Anonymous (no certificate) is refused too; the creator's certificate user is kept on the upgraded
    # TLS connection all the way to the kubelet.
    with pytest.raises(UpgradeFailed) as anonymous:
        asyncio.run(exec_websocket(url, tls=harness.anonymous_tls()))
    assert anonymous.value.code == 403
    result = harness.wait_for(lambda: asyncio.run(exec_websocket(url, tls=harness.user_tls("creator"))),
                              timeout=30, message="the creator's exec")
    assert result.stdout == b"hi\n" and result.exit_code == 0  # type: ignore[attr-defined]


def test_metrics_server_acts_as_its_service_account_and_view_reads_metrics(
        cluster: harness.Cluster, api: httpx.Client, jane: httpx.Client, namespace: str) -> None:
    """metrics-server's manifest: its ServiceAccount bound to system:metrics-server (nodes/metrics, nodes,
    Pods) and system:aggregated-metrics-reader aggregated into view, so a view user reads PodMetrics."""
    metrics_server = "system:serviceaccount:kube-system:metrics-server"
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": metrics_server, "groups": ["system:serviceaccounts",
                                                          "system:serviceaccounts:kube-system"],
                       "resourceAttributes": {"verb": "get", "resource": "nodes", "subresource": "metrics",
                                              "name": "node-1"}}}
    r = api.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", json=review)
    assert r.json()["status"]["allowed"] is True, r.text
    review["spec"]["resourceAttributes"] = {"verb": "list", "resource": "secrets"}
    assert api.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", json=review).json()["status"][
        "allowed"] is False
    # Its requests in the audit log are under that name.
    harness.wait_for(lambda: metrics_server in cluster.audit_log.read_text(), timeout=30,
                     message="metrics-server's own requests")
    harness.wait_for(lambda: jane.get(f"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods").status_code
                     == 200, timeout=30, message="view reading PodMetrics")
    assert forbidden(jane.get("/apis/metrics.k8s.io/v1beta1/nodes")).endswith(
        'cannot list resource "nodes" in API group "metrics.k8s.io" at the cluster scope')


def test_the_kubelet_api_authenticates_and_authorizes_each_request(
        cluster: harness.Cluster, api: httpx.Client, namespace: str, kubectl: Kubectl) -> None:
    """The kubelet's port runs Pods' commands, so it serves only whom the APIServer vouches for: kubeadm's
    kubelet settings (no anonymous requests, client certificates of the cluster CA, bearer tokens by
    TokenReview, each request authorized by a SubjectAccessReview of ``nodes/<subresource>``)."""
    _running_pod(api, namespace, "web")
    status = api.get("/api/v1/nodes/node-1").json()["status"]
    kubelet = f"https://127.0.0.1:{status['daemonEndpoints']['kubeletEndpoint']['Port']}"
    logs, metrics, stats = (f"/containerLogs/{namespace}/web/c", "/nodes/node-1/metrics/resource",
                            "/nodes/node-1/stats/summary")
    exec_path = f"/exec/{namespace}/web/c?command=id&output=1"

    def refused(r: httpx.Response, code: int, text: str) -> None:
        assert (r.status_code, r.text) == (code, text), (r.status_code, r.text)

    # Nobody: 401, whatever the path, and a token the APIServer does not know is nobody.
    with httpx.Client(base_url=kubelet, verify=harness.kubelet_tls(), timeout=10) as anonymous:
        for path in (logs, metrics, "/healthz"):
            refused(anonymous.get(path), 401, "Unauthorized")
        refused(anonymous.get(logs, headers={"Authorization": "Bearer garbage"}), 401, "Unauthorized")
    # A ServiceAccount with no rights is known (TokenReview) and refused (SubjectAccessReview).
    assert api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                    json={"metadata": {"name": "nobody"}}).status_code == 201
    token = kubectl("create", "token", "nobody").strip()
    with httpx.Client(base_url=kubelet, verify=harness.kubelet_tls(), timeout=10,
                      headers={"Authorization": f"Bearer {token}"}) as robot:
        refused(robot.get(logs), 403, f"Forbidden (user=system:serviceaccount:{namespace}:nobody, verb=get, "
                                      "resource=nodes, subresource=proxy)")
    # A user who may read nodes/metrics (what metrics-server's role grants) reads metrics and nothing else.
    reader = f"metrics-reader-{uuid.uuid4().hex[:6]}"
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": reader},
            "rules": [{"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]}]}
    assert api.post(f"{RBAC}/clusterroles", json=role).status_code == 201
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": reader},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": reader},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": reader}]}
    assert api.post(f"{RBAC}/clusterrolebindings", json=binding).status_code == 201
    try:
        with httpx.Client(base_url=kubelet, verify=harness.kubelet_tls(reader), timeout=10) as user:
            answer = harness.wait_for(lambda: (r := user.get(metrics)).status_code == 200 and r, timeout=30,
                                      message="the binding to reach the kubelet's SubjectAccessReview")
            assert "node_cpu_usage_seconds_total" in answer.text  # type: ignore[union-attr]
            refused(user.get(stats), 403, f"Forbidden (user={reader}, verb=get, resource=nodes, "
                                          "subresource=stats)")
            refused(user.get(logs), 403, f"Forbidden (user={reader}, verb=get, resource=nodes, "
                                         "subresource=proxy)")
            refused(user.post(exec_path), 403, f"Forbidden (user={reader}, verb=create, resource=nodes, "
                                               "subresource=proxy)")
    finally:
        api.delete(f"{RBAC}/clusterrolebindings/{reader}")
        api.delete(f"{RBAC}/clusterroles/{reader}")
    # The APIServer's own certificate (kube-apiserver-kubelet-client, system:masters) gets in: pods/log works.
    assert api.get(f"/api/v1/namespaces/{namespace}/pods/web/log").status_code == 200
