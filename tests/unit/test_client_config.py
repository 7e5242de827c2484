"""Connection settings: kubeconfig files and the --master/--kubeconfig flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesim.kubeconfig import write_kubeconfig
from machinery.client import ClientConfig, ConfigError, config_from_flags, load_kubeconfig

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
- name: one
  cluster: {server: "http://127.0.0.1:6443"}
- name: two
  cluster: {server: "https://10.0.0.1:443"}
users:
- name: admin
  user: {token: secret-token}
- name: filed
  user: {tokenFile: token.txt}
- name: anonymous
  user: {}
contexts:
- name: main
  context: {cluster: one, user: admin}
- name: other
  context: {cluster: two, user: filed}
- name: anon
  context: {cluster: one, user: anonymous}
- name: broken
  context: {cluster: missing, user: admin}
current-context: main
"""


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    (tmp_path / "token.txt").write_text("from-file\n")
    return path


@pytest.mark.parametrize(("context", "expected"), [
    pytest.param(None, ClientConfig("http://127.0.0.1:6443", "secret-token"), id="current-context"),
    pytest.param("other", ClientConfig("https://10.0.0.1:443", "from-file"), id="token-file-relative-to-config"),
    pytest.param("anon", ClientConfig("http://127.0.0.1:6443", None), id="no-credentials"),
])
def test_load_kubeconfig(kubeconfig: Path, context: str | None, expected: ClientConfig) -> None:
    assert load_kubeconfig(kubeconfig, context=context) == expected


@pytest.mark.parametrize(("text", "context", "message"), [
    pytest.param(KUBECONFIG, "nope", 'context "nope" does not exist', id="unknown-context"),
    pytest.param(KUBECONFIG, "broken", 'cluster "missing" does not exist', id="unknown-cluster"),
    pytest.param("clusters: [", None, "is not valid YAML", id="bad-yaml"),
    pytest.param("- a\n- b\n", None, "expected a mapping", id="not-a-mapping"),
    pytest.param("apiVersion: v1\nkind: Config\n", None, "has no current-context", id="no-current-context"),
    pytest.param("current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
                 "clusters: [{name: k, cluster: {server: 'ftp://x'}}]\n", None, "invalid server URL",
                 id="bad-server-url"),
    pytest.param("current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
                 "clusters: [{name: k, cluster: {server: 'http://x'}}]\n"
                 "users: [{name: u, user: {client-certificate: /x.crt, client-key: /x.key}}]\n", None,
                 "cannot read client-certificate /x.crt", id="missing-client-certificate"),
    pytest.param("current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
                 "clusters: [{name: k, cluster: {server: 'http://x'}}]\n"
                 "users: [{name: u, user: {client-certificate-data: AAAA}}]\n", None,
                 "a client certificate without its key", id="certificate-without-key"),
    pytest.param("current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
                 "clusters: [{name: k, cluster: {server: 'http://x', certificate-authority-data: '%%%'}}]\n",
                 None, "certificate-authority-data is not valid base64", id="bad-base64"),
    pytest.param("current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
                 "clusters: [{name: k, cluster: {server: 'http://x'}}]\n"
                 "users: [{name: u, user: {exec: {command: aws}}}]\n", None,
                 "supports client certificates and bearer tokens", id="exec-plugins-rejected"),
])
def test_load_kubeconfig_errors(tmp_path: Path, text: str, context: str | None, message: str) -> None:
    path = tmp_path / "config"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_kubeconfig(path, context=context)


def test_missing_kubeconfig_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read kubeconfig"):
        load_kubeconfig(tmp_path / "absent")


def test_reads_what_kubesim_up_writes(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "kubeconfig"
    write_kubeconfig(path, "http://127.0.0.1:7000", token="tok")
    assert load_kubeconfig(path) == ClientConfig("http://127.0.0.1:7000", "tok")
    write_kubeconfig(path, "http://127.0.0.1:7001")
    assert load_kubeconfig(path) == ClientConfig("http://127.0.0.1:7001", None)


def test_flags_master_overrides_kubeconfig_server_and_keeps_token(kubeconfig: Path) -> None:
    assert config_from_flags("http://127.0.0.1:9999", str(kubeconfig)) == \
        ClientConfig("http://127.0.0.1:9999", "secret-token")
    assert config_from_flags(None, str(kubeconfig)) == ClientConfig("http://127.0.0.1:6443", "secret-token")
    assert config_from_flags("http://127.0.0.1:1", None) == ClientConfig("http://127.0.0.1:1")


def test_flags_fall_back_to_env_then_fail(kubeconfig: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{kubeconfig.parent / 'absent'}:{kubeconfig}")
    assert config_from_flags(None, None).server == "http://127.0.0.1:6443"
    monkeypatch.delenv("KUBECONFIG")
    with pytest.raises(ConfigError, match="neither --kubeconfig nor --master"):
        config_from_flags(None, None)
