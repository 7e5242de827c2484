"""ConfigMaps and Secrets: keys, sizes, types, immutability and the base64 wire form, as Kubernetes 1.32 has them."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from apiserver.errors import APIError
from apiserver.registry.core import bytedata, configmaps, secrets
from apiserver.validation import core as validation

STORED = {"uid": "u1", "resourceVersion": "3", "creationTimestamp": "2024-05-01T10:00:00Z"}
CONFIG_KEY = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
              "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def errors_of(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def config_map(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "default", **STORED},
            **fields}


def secret(**fields: Any) -> dict[str, Any]:
    obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default", **STORED},
           **fields}
    secrets.RESOURCE.strategy.default(obj)  # type: ignore[union-attr]
    return obj


# --- ConfigMap -----------------------------------------------------------------------------------

CONFIG_MAP_CASES = [
    pytest.param({"data": {"app.properties": "a=b", "KEY_1": "x", "key-2": ""}}, [], id="valid-keys"),
    pytest.param({"data": {"a b": "x"}}, [f'data[a b]: Invalid value: "a b": {CONFIG_KEY}'], id="space-in-key"),
    pytest.param({"data": {"..": "x"}}, ["data[..]: Invalid value: \"..\": must not be '..'"], id="dotdot"),
    pytest.param({"data": {"..x": "x"}}, ["data[..x]: Invalid value: \"..x\": must not start with '..'"],
                 id="dotdot-prefix"),
    pytest.param({"data": {"k": "x"}, "binaryData": {"k": b64("y")}},
                 ['data[k]: Invalid value: "k": duplicate of key present in binaryData'], id="key-in-both"),
    pytest.param({"binaryData": {"a/b": b64("y")}}, [f'binaryData[a/b]: Invalid value: "a/b": {CONFIG_KEY}'],
                 id="binary-key"),
    pytest.param({"data": {"big": "x" * (1024 * 1024 + 1)}}, [": Too long: may not be more than 1048576 bytes"],
                 id="too-big"),
    pytest.param({"data": {"half": "x" * (512 * 1024)}, "binaryData": {"other": b64("y" * (512 * 1024 + 1))}},
                 [": Too long: may not be more than 1048576 bytes"], id="too-big-counting-decoded-binary"),
]


@pytest.mark.parametrize(("fields", "expected"), CONFIG_MAP_CASES)
def test_validate_config_map(fields: dict[str, Any], expected: list[str]) -> None:
    assert errors_of(validation.validate_config_map(config_map(**fields))) == expected


def test_an_immutable_config_map_keeps_its_data_and_stays_immutable() -> None:
    old = config_map(data={"a": "1"}, binaryData={"b": b64("2")}, immutable=True)
    assert validation.validate_config_map_update(copy.deepcopy(old), old) == []
    changed = config_map(data={"a": "2"}, binaryData={"b": b64("3")}, immutable=False)
    assert errors_of(validation.validate_config_map_update(changed, old)) == [
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set",
        "binaryData: Forbidden: field is immutable when `immutable` is set",
    ]
    # A mutable ConfigMap may change, and may become immutable.
    assert validation.validate_config_map_update(config_map(data={"a": "9"}, immutable=True),
                                                 config_map(data={"a": "1"})) == []


# --- base64 on the wire ---------------------------------------------------------------------------

BASE64_CASES = [
    pytest.param("YWRtaW4=", None, id="valid"),
    pytest.param("", None, id="empty"),
    pytest.param("YWRt\naW4=\r\n", None, id="newlines-skipped"),
    pytest.param("admin", 4, id="unpadded"),
    pytest.param("billy", 4, id="unpadded-2"),
    pytest.param("a$dm", 1, id="illegal-character"),
    pytest.param("YQ=", 3, id="short-padding"),
    pytest.param("Y===", 1, id="padding-too-early"),
    pytest.param("YQ==YQ==", 4, id="data-after-padding"),
    pytest.param("YWI=x", 4, id="garbage-after-padding"),
    pytest.param("<foo>", 0, id="angle-brackets"),
]


@pytest.mark.parametrize(("text", "offset"), BASE64_CASES)
def test_base64_errors_name_the_byte_go_names(text: str, offset: int | None) -> None:
    assert bytedata.decode_error(text) == offset


def test_a_secret_with_bad_base64_is_a_400_naming_the_byte() -> None:
    with pytest.raises(APIError) as raised:
        secrets.merge_string_data({"data": {"username": "admin"}})
    assert raised.value.code == 400
    assert raised.value.message == ('Secret in version "v1" cannot be handled as a Secret: illegal base64 data at '
                                    "input byte 4")
    with pytest.raises(APIError) as raised:
        configmaps.RESOURCE.strategy.prepare_for_create({"binaryData": {"k": "!!"}})  # type: ignore[union-attr]
    assert raised.value.message == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: illegal base64 '
                                    "data at input byte 0")


def test_string_data_is_folded_into_data_and_never_kept() -> None:
    obj: dict[str, Any] = {"data": {"a": b64("old"), "b": "YmVl\n"}, "stringData": {"a": "new", "c": "héllo"}}
    secrets.merge_string_data(obj)
    assert obj == {"data": {"a": b64("new"), "b": b64("bee"), "c": b64("héllo")}}


# --- Secret --------------------------------------------------------------------------------------

SECRET_CASES = [
    pytest.param({}, [], id="opaque-by-default"),
    pytest.param({"data": {"bad key": b64("x")}}, [f'data[bad key]: Invalid value: "bad key": {CONFIG_KEY}'],
                 id="key-name"),
    pytest.param({"data": {"big": b64("x" * (1024 * 1024 + 1))}}, [("data: Too long: may not be more than 1048576 "
                                                                   "bytes")], id="too-big"),
    pytest.param({"type": "kubernetes.io/tls", "data": {"tls.crt": b64("c")}},
                 ["data[tls.key]: Required value"], id="tls-needs-key"),
    pytest.param({"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}, [], id="tls-empty-present"),
    pytest.param({"type": "kubernetes.io/basic-auth"},
                 ["data[username]: Required value", "data[password]: Required value"], id="basic-auth"),
    pytest.param({"type": "kubernetes.io/basic-auth", "data": {"password": b64("p")}}, [],
                 id="basic-auth-password-only"),
    pytest.param({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}},
                 ["data[ssh-privatekey]: Required value"], id="ssh-auth-empty-key"),
    pytest.param({"type": "kubernetes.io/dockerconfigjson"}, ["data[.dockerconfigjson]: Required value"],
                 id="dockerconfigjson-missing"),
    pytest.param({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64('{"auths":{}}')}}, [],
                 id="dockerconfigjson"),
    pytest.param({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64("{nope")}},
                 [('data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character \'n\' '
                  "looking for beginning of object key string")], id="dockerconfigjson-bad-json"),
    pytest.param({"type": "kubernetes.io/dockercfg", "data": {".dockercfg": b64("[]")}},
                 [('data[.dockercfg]: Invalid value: "<secret contents redacted>": json: cannot unmarshal array into '
                  "Go value of type map[string]interface {}")], id="dockercfg-not-an-object"),
    pytest.param({"type": "kubernetes.io/service-account-token"},
                 ["metadata.annotations[kubernetes.io/service-account.name]: Required value"], id="sa-token"),
    pytest.param({"type": "example.com/anything", "data": {"x": b64("y")}}, [], id="custom-type"),
]


@pytest.mark.parametrize(("fields", "expected"), SECRET_CASES)
def test_validate_secret(fields: dict[str, Any], expected: list[str]) -> None:
    assert errors_of(validation.validate_secret(secret(**fields))) == expected


def test_a_secret_type_defaults_to_opaque_and_never_changes() -> None:
    old = secret()
    assert old["type"] == "Opaque"
    changed = secret(type="kubernetes.io/basic-auth", data={"username": b64("u")})
    assert errors_of(validation.validate_secret_update(changed, old)) == [
        'type: Invalid value: "kubernetes.io/basic-auth": field is immutable']
    # An update that leaves the type out keeps it, as kube-apiserver's PrepareForUpdate does.
    without_type: dict[str, Any] = {"metadata": dict(old["metadata"]), "data": {"a": b64("1")}}
    secrets.RESOURCE.strategy.prepare_for_update(without_type, old)  # type: ignore[union-attr]
    assert without_type["type"] == "Opaque"


def test_an_immutable_secret_keeps_its_data() -> None:
    old = secret(data={"a": b64("1")}, immutable=True)
    changed = secret(data={"a": b64("2")})
    assert errors_of(validation.validate_secret_update(changed, old)) == [
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set",
    ]


def test_secrets_can_be_selected_by_type() -> None:
    strategy = secrets.RESOURCE.strategy
    assert strategy is not None and strategy.supports_field("type")
    assert strategy.fields(secret(type="kubernetes.io/tls"))["type"] == "kubernetes.io/tls"
