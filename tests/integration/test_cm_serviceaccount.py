"""ServiceAccounts end to end: the controller makes ``default`` and ``kube-root-ca.crt``, admission uses them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests import harness, kube
from tests.integration.test_cm_support import get, start_controller_manager, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sa_cluster() -> Iterator[harness.Cluster]:
    with harness.cluster(service_accounts=True) as c:
        start_controller_manager(c, "--controllers=serviceaccount,root-ca-cert-publisher", name="cm-sa")
        yield c


@pytest.fixture
def sa_api(sa_cluster: harness.Cluster) -> Iterator[httpx.Client]:
    with sa_cluster.client(timeout=30) as client:
        yield client


def new_namespace(api: httpx.Client) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    assert api.post("/api/v1/namespaces", json={"metadata": {"name": name}}).status_code == 201
    return name


def test_a_new_namespace_gets_default_and_the_root_ca_and_gets_them_back(sa_api: httpx.Client) -> None:
    ns = new_namespace(sa_api)
    sa_path = f"/api/v1/namespaces/{ns}/serviceaccounts/default"
    cm_path = f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"
    wait_until(lambda: get(sa_api, sa_path) and get(sa_api, cm_path), message="default and kube-root-ca.crt")
    config_map = get(sa_api, cm_path)
    assert config_map is not None and set(config_map["data"]) == {"ca.crt"}
    # The cluster CA (--root-ca-file), which verifies the APIServer's serving certificate.
    assert config_map["data"]["ca.crt"] == harness.session_files().files.ca_cert.read_text()
    assert "kubernetes.io/description" in config_map["metadata"]["annotations"]
    first_uid = get(sa_api, sa_path)["metadata"]["uid"]  # type: ignore[index]
    assert sa_api.delete(sa_path).status_code == 200
    assert sa_api.delete(cm_path).status_code == 200
    wait_until(lambda: (sa := get(sa_api, sa_path)) is not None and sa["metadata"]["uid"] != first_uid
               and get(sa_api, cm_path), message="both made again")


def test_pods_run_as_default_with_the_token_volume_and_a_missing_account_is_refused(sa_api: httpx.Client) -> None:
    ns = new_namespace(sa_api)
    wait_until(lambda: get(sa_api, f"/api/v1/namespaces/{ns}/serviceaccounts/default"), message="default")
    r = sa_api.post(f"/api/v1/namespaces/{ns}/pods", json=kube.pod("p"))
    assert r.status_code == 201, r.text
    spec = r.json()["spec"]
    assert spec["serviceAccountName"] == "default"
    [volume] = [v for v in spec["volumes"] if v["name"].startswith("kube-api-access-")]
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": volume["name"], "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
    r = sa_api.post(f"/api/v1/namespaces/{ns}/pods", json=kube.pod("q", serviceAccountName="robot"))
    assert r.status_code == 403
    assert r.json()["message"] == (f'pods "q" is forbidden: error looking up service account {ns}/robot: '
                                   'serviceaccount "robot" not found')
