"""The cluster's certificates and kubeconfigs, as kubesim up and kubesim certs make them."""

from __future__ import annotations

import ssl
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import NameOID

from kubesim import certs, clusterfiles
from machinery import pki
from machinery.client.config import load_kubeconfig


def test_files_are_private_and_kept_across_runs(tmp_path: Path) -> None:
    files = certs.ensure(tmp_path / "pki", hosts=["apiserver"])
    for path in (tmp_path / "pki").iterdir():
        assert oct(path.stat().st_mode & 0o777) == "0o600", path
    ca = files.ca_cert.read_bytes()
    again = certs.ensure(tmp_path / "pki", hosts=["apiserver"])
    assert again.ca_cert.read_bytes() == ca
    serving = pki.load_cert(files.serving_cert)
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"apiserver", "localhost", "kubernetes.default.svc"} <= set(names.get_values_for_type(x509.DNSName))
    # A new host makes a new serving certificate from the same CA.
    certs.ensure(tmp_path / "pki", hosts=["apiserver", "api.example"])
    assert files.ca_cert.read_bytes() == ca
    assert pki.load_cert(files.serving_cert).serial_number != serving.serial_number


def test_client_certificates_name_their_identity(tmp_path: Path) -> None:
    files = certs.ensure(tmp_path / "pki")
    admin = pki.load_cert(files.client_cert(certs.ADMIN))
    assert admin.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kubernetes-admin"
    assert [a.value for a in admin.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["system:masters"]
    ctx = ssl.create_default_context(cafile=str(files.ca_cert))
    ctx.load_cert_chain(str(files.client_cert(certs.ADMIN)), str(files.client_key(certs.ADMIN)))


def test_node_tokens_keep_their_values(tmp_path: Path) -> None:
    files = certs.ensure(tmp_path / "pki")
    certs.write_node_tokens(files, ["node-1", "node-2"])
    first = files.node_tokens()
    assert set(first) == {"node-1", "node-2"} and first["node-1"] != first["node-2"]
    certs.write_node_tokens(files, ["node-1", "node-2", "node-3"])
    assert files.node_tokens()["node-1"] == first["node-1"] and "node-3" in files.node_tokens()
    assert files.tokens.read_text().splitlines()[0].split(",")[1:] == [
        "system:node:node-1", files.tokens.read_text().splitlines()[0].split(",")[2], "system:nodes"]


def test_kubeconfigs_embed_what_they_need(tmp_path: Path) -> None:
    out = clusterfiles.prepare(tmp_path, "https://127.0.0.1:6443", ["node-1"])
    admin = load_kubeconfig(out.admin_kubeconfig)
    assert admin.server == "https://127.0.0.1:6443"
    assert admin.tls.ca == out.files.ca_cert.read_bytes() and admin.tls.cert and admin.tls.key
    assert admin.ssl_context() is not None
    kubelet = load_kubeconfig(out.kubeconfig("kubelet"))
    assert kubelet.token == out.files.node_tokens()["node-1"] and kubelet.tls.cert is None
    assert "--use-service-account-credentials" in out.component_flags("controller-manager")
    assert f"--node-tokens={out.files.tokens}" in out.component_flags("kubelet")
    assert f"--audit-log-path={out.audit_log}" in out.apiserver_flags()
    assert oct(out.admin_kubeconfig.stat().st_mode & 0o777) == "0o600"


def test_kubesim_certs_makes_compose_files(tmp_path: Path) -> None:
    from kubesim.cli import build_parser

    args = build_parser().parse_args(["certs", "--data-dir", str(tmp_path), "--server", "https://apiserver:6443",
                                      "--admin-server", "https://127.0.0.1:6443", "--host", "apiserver",
                                      "--nodes", "3"])
    assert args.func(args) == 0
    assert load_kubeconfig(tmp_path / "kubeconfig").server == "https://127.0.0.1:6443"
    assert load_kubeconfig(tmp_path / "scheduler.conf").server == "https://apiserver:6443"
    assert set(certs.ClusterPKI(tmp_path / "pki").node_tokens()) == {"node-1", "node-2", "node-3"}
