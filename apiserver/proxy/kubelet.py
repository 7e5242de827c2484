"""How the APIServer reaches kubelets: HTTPS, as itself (kube-apiserver's ``pkg/kubelet/client``).

Every kubelet request of the APIServer (exec, attach, port-forward, logs, the
``nodes/proxy`` and ``pods/proxy`` subresources) goes to the node's kubelet
port over TLS:

- ``--kubelet-client-certificate`` and ``--kubelet-client-key``: the client
  certificate the APIServer presents, which the kubelet's ``--client-ca-file``
  accepts (kubeadm's ``apiserver-kubelet-client``: ``kube-apiserver-kubelet-client``
  in ``system:masters``, which the kubelet's Webhook authorization allows);
- ``--kubelet-certificate-authority``: the CA the kubelets' serving
  certificates are checked against; without it they are not checked, as
  kube-apiserver does not (kubelets serve self-signed certificates by default).

Concurrency: one TLS context, and one pooled HTTP client for plain requests,
shared by every request; closed with the APIServer.
"""

from __future__ import annotations

import ssl

import httpx

from apiserver.settings import SecuritySettings


def client_context(security: SecuritySettings) -> ssl.SSLContext:
    """The TLS context of connections to kubelets."""
    if security.kubelet_certificate_authority:
        ctx = ssl.create_default_context(cafile=security.kubelet_certificate_authority)
    else:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if security.kubelet_client_certificate:
        ctx.load_cert_chain(security.kubelet_client_certificate, security.kubelet_client_key)
    return ctx


class KubeletClient:
    """The TLS context and HTTP client the APIServer reaches kubelets with."""

    def __init__(self, security: SecuritySettings) -> None:
        self.tls = client_context(security)
        self.http = httpx.AsyncClient(verify=self.tls, timeout=httpx.Timeout(10.0, read=None))

    @staticmethod
    def url(host: str, port: int, target: str) -> str:
        """The kubelet URL of ``target`` (a path with its query)."""
        return f"https://{host}:{port}{target}"

    async def aclose(self) -> None:
        await self.http.aclose()
