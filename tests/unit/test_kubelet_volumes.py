"""A container's volumes and variables as the kubelet computes them (kubelet_sim.volumes)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from kubelet_sim.volumes import BoundPod, VolumeError, container_environment, expand, volume_files


class Objects:
    def __init__(self) -> None:
        self.reads: list[tuple[str, str]] = []
        self.config_maps = {"app": {"data": {"mode": "debug", "file.conf": "a=1"},
                                    "binaryData": {"blob": base64.b64encode(b"\x00\x01").decode()}}}
        self.secrets = {"creds": {"data": {"password": base64.b64encode(b"s3cret").decode()}}}

    async def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.reads.append(("cm", name))
        return self.config_maps.get(name)

    async def secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.reads.append(("secret", name))
        return self.secrets.get(name)


POD: dict[str, Any] = {
    "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1", "labels": {"app": "web"}},
    "spec": {"nodeName": "node-2", "volumes": [
        {"name": "config", "configMap": {"name": "app"}},
        {"name": "picked", "configMap": {"name": "app", "items": [{"key": "mode", "path": "sub/m", "mode": 0o400}],
                                         "defaultMode": 0o440}},
        {"name": "secret", "secret": {"secretName": "creds"}},
        {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                                                   {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"name": "both", "projected": {"sources": [{"configMap": {"name": "app", "items": [{"key": "mode",
                                                                                            "path": "mode"}]}},
                                                   {"secret": {"name": "creds"}}]}},
        {"name": "scratch", "emptyDir": {}},
    ]},
    "status": {"podIP": "10.0.1.7", "hostIP": "127.0.0.1"},
}


async def test_volume_files_with_items_modes_and_projections() -> None:
    objects = Objects()
    files = await volume_files(POD, objects)
    assert files["config"] == {"mode": (b"debug", 0o644), "file.conf": (b"a=1", 0o644), "blob": (b"\x00\x01", 0o644)}
    assert files["picked"] == {"sub/m": (b"debug", 0o400)}
    assert files["secret"] == {"password": (b"s3cret", 0o644)}
    assert files["info"] == {"labels": (b'app="web"', 0o644), "name": (b"web-1", 0o644)}
    assert files["both"] == {"mode": (b"debug", 0o644), "password": (b"s3cret", 0o644)}
    assert files["scratch"] == {}
    # One read per object, however many volumes name it.
    assert sorted(set(objects.reads)) == sorted(objects.reads)


async def test_a_missing_config_map_fails_unless_optional_or_lenient() -> None:
    pod = {"metadata": {"namespace": "shop"}, "spec": {"volumes": [{"name": "v", "configMap": {"name": "gone"}}]}}
    with pytest.raises(VolumeError, match='configmap "gone" not found'):
        await volume_files(pod, Objects())
    assert await volume_files(pod, Objects(), strict=False) == {"v": {}}
    pod["spec"]["volumes"][0]["configMap"]["optional"] = True
    assert await volume_files(pod, Objects()) == {"v": {}}


async def test_environment_in_the_kubelets_order() -> None:
    container = {
        "name": "app",
        "envFrom": [{"configMapRef": {"name": "app"}, "prefix": "CM_"}],
        "env": [
            {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "URL", "value": "http://$(IP):80/$(MISSING)/$$x"},
            {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
            {"name": "OPTIONAL", "valueFrom": {"configMapKeyRef": {"name": "app", "key": "absent", "optional": True}}},
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}}},
        ],
        "resources": {"requests": {"cpu": "250m"}},
    }
    env = await container_environment(POD, container, Objects(), hostname="web-1", tty=True)
    assert env == {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME": "web-1", "TERM": "xterm",
        "CM_mode": "debug", "CM_file.conf": "a=1", "CM_blob": "\x00\x01",
        "NODE": "node-2", "IP": "10.0.1.7", "URL": "http://10.0.1.7:80/$(MISSING)/$x", "PASSWORD": "s3cret",
        "CPU": "250", "HOME": "/root",
    }


async def test_a_missing_key_that_is_not_optional_is_an_error() -> None:
    container = {"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "app", "key": "absent"}}}]}
    with pytest.raises(VolumeError, match="couldn't find key absent in ConfigMap shop/app"):
        await container_environment(POD, container, Objects(), hostname="h")


@pytest.mark.parametrize(("value", "expected"), [
    pytest.param("$(A)-$(B)", "1-$(B)", id="unknown-kept"),
    pytest.param("$$(A)", "$(A)", id="escaped"),
    pytest.param("plain $ sign", "plain $ sign", id="lone-dollar"),
])
def test_expand(value: str, expected: str) -> None:
    assert expand(value, {"A": "1"}) == expected


class TokenObjects(Objects):
    """Objects that also hand out tokens, recording what was asked."""

    def __init__(self, refuse: str = "") -> None:
        super().__init__()
        self.refuse = refuse
        self.requests: list[tuple[str, str, BoundPod, str, int]] = []

    async def service_account_token(self, namespace: str, service_account: str, pod: BoundPod,
                                    audience: str, expiration_seconds: int) -> str:
        self.requests.append((namespace, service_account, pod, audience, expiration_seconds))
        if self.refuse:
            raise VolumeError(f"failed to fetch token: {self.refuse}")
        return f"token-for-{service_account}-{audience or 'api'}"


API_ACCESS: dict[str, Any] = {
    "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1"},
    "spec": {"serviceAccountName": "robot", "volumes": [
        {"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 0o644, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "app", "items": [{"key": "mode", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
        ]}},
        {"name": "vault", "projected": {"sources": [
            {"serviceAccountToken": {"audience": "vault", "path": "vault-token"}}]}},
    ]},
}


async def test_a_projected_token_is_requested_for_the_pods_service_account_bound_to_the_pod() -> None:
    objects = TokenObjects()
    files = await volume_files(API_ACCESS, objects)
    assert files["kube-api-access-x7k2p"] == {"token": (b"token-for-robot-api", 0o644), "ca.crt": (b"debug", 0o644),
                                              "namespace": (b"shop", 0o644)}
    assert files["vault"] == {"vault-token": (b"token-for-robot-vault", 0o644)}
    assert objects.requests == [("shop", "robot", BoundPod("web-1", "u-1"), "", 3607),
                                ("shop", "robot", BoundPod("web-1", "u-1"), "vault", 3600)]
    # A Pod that names no ServiceAccount runs as "default".
    default = {**API_ACCESS, "spec": {**API_ACCESS["spec"], "serviceAccountName": None}}
    await volume_files(default, objects)
    assert objects.requests[-1][1] == "default"


async def test_a_token_the_apiserver_refuses_fails_the_mount_unless_lenient() -> None:
    with pytest.raises(VolumeError, match='failed to fetch token: serviceaccounts "robot" not found'):
        await volume_files(API_ACCESS, TokenObjects(refuse='serviceaccounts "robot" not found'))
    files = await volume_files(API_ACCESS, TokenObjects(refuse="no"), strict=False)
    assert files["kube-api-access-x7k2p"] == {}
