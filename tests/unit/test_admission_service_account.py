"""The ServiceAccount admission plugin: the default account, its existence, the projected token volume."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver import errors
from apiserver.admission.service_account import MOUNT_PATH, ServiceAccount
from machinery.api import kinds
from tests.unit.test_admission import Context, attrs

DEFAULT_SA = {"metadata": {"name": "default", "namespace": "default"}}


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "a", "image": "i"}], "initContainers": [{"name": "b", "image": "i"}],
                     **spec}}


async def test_the_default_account_is_set_and_its_token_mounted_in_every_container() -> None:
    obj = pod()
    await ServiceAccount().admit(attrs("CREATE", kinds.PODS, obj, ctx=Context(serviceaccounts=[DEFAULT_SA])))
    spec = obj["spec"]
    assert spec["serviceAccountName"] == "default"
    [volume] = spec["volumes"]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == len("kube-api-access-") + 5
    assert volume["projected"] == {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                      "fieldPath": "metadata.namespace"}}]}}]}
    for container in spec["containers"] + spec["initContainers"]:
        assert container["volumeMounts"] == [{"name": volume["name"], "readOnly": True, "mountPath": MOUNT_PATH}]


async def test_a_missing_account_refuses_the_pod_with_kubernetes_message() -> None:
    obj = pod(serviceAccountName="builder")
    obj["metadata"] = {"generateName": "web-", "namespace": "default"}
    with pytest.raises(errors.APIError) as raised:
        await ServiceAccount().admit(attrs("CREATE", kinds.PODS, obj, ctx=Context(serviceaccounts=[DEFAULT_SA]),
                                           name=""))
    assert raised.value.code == 403
    assert raised.value.message == ('pods "web-" is forbidden: error looking up service account default/builder: '
                                    'serviceaccount "builder" not found')


@pytest.mark.parametrize(("account", "spec"), [
    pytest.param({"automountServiceAccountToken": False}, {}, id="account-opts-out"),
    pytest.param({}, {"automountServiceAccountToken": False}, id="pod-opts-out"),
    pytest.param({}, {"containers": [{"name": "a", "image": "i", "volumeMounts": [
        {"name": "mine", "mountPath": MOUNT_PATH}]}], "volumes": [{"name": "mine", "emptyDir": {}}]},
                 id="already-mounted"),
])
async def test_no_token_is_mounted_when_opted_out_or_already_there(account: dict[str, Any],
                                                                   spec: dict[str, Any]) -> None:
    obj = pod(**spec)
    before = [v["name"] for v in obj["spec"].get("volumes", [])]
    await ServiceAccount().admit(attrs("CREATE", kinds.PODS, obj,
                                       ctx=Context(serviceaccounts=[{**DEFAULT_SA, **account}])))
    assert [v["name"] for v in obj["spec"].get("volumes", [])] == before


async def test_the_pod_may_opt_in_when_the_account_opts_out() -> None:
    obj = pod(automountServiceAccountToken=True)
    await ServiceAccount().admit(attrs("CREATE", kinds.PODS, obj, ctx=Context(
        serviceaccounts=[{**DEFAULT_SA, "automountServiceAccountToken": False}])))
    assert len(obj["spec"]["volumes"]) == 1
