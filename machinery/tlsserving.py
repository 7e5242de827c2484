"""Serving TLS as Kubernetes' components do: given files, kept ones, or a new self-signed certificate.

kube-apiserver and the kubelet share these rules (``SecureServingOptions``):

- ``--tls-cert-file`` and ``--tls-private-key-file`` together name the serving
  certificate; one without the other is an error;
- without them, a certificate kept in ``--cert-dir`` (``<stem>.crt`` and
  ``<stem>.key``: ``apiserver``, ``kubelet``) is used, else a new self-signed
  one for the given hosts is made, and kept there when a directory is given;
- the context serves TLS 1.2 or later; with a client CA, every client is
  asked for a certificate (optional), verified against it during the
  handshake, and the peer certificate then names the user (:func:`peer_subject`).

Synchronous: called once at start.
"""

from __future__ import annotations

import contextlib
import logging
import os
import ssl
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from machinery import pki

log = logging.getLogger("machinery.tlsserving")


def serving_pair(cert_file: str | None, key_file: str | None, cert_dir: str | None, hosts: Sequence[str], *,
                 stem: str) -> tuple[bytes, bytes]:
    """The serving certificate and key (PEM): the given files, those kept in ``cert_dir``, or new self-signed ones."""
    if cert_file and key_file:
        return Path(cert_file).read_bytes(), Path(key_file).read_bytes()
    if cert_file or key_file:
        raise ValueError("--tls-cert-file and --tls-private-key-file must be given together")
    kept = (Path(cert_dir) / f"{stem}.crt", Path(cert_dir) / f"{stem}.key") if cert_dir else None
    if kept is not None and kept[0].exists() and kept[1].exists():
        return kept[0].read_bytes(), kept[1].read_bytes()
    cert, key = pki.self_signed_serving(list(dict.fromkeys(hosts)))
    cert_pem, key_pem = pki.cert_pem(cert), pki.key_pem(key)
    if kept is not None:
        pki.write_private(kept[0], cert_pem)
        pki.write_private(kept[1], key_pem)
        log.info("generated a self-signed serving certificate in %s", cert_dir)
    else:
        log.info("generated a self-signed serving certificate (no --tls-cert-file)")
    return cert_pem, key_pem


def server_context(cert: bytes, key: bytes, client_ca_file: str | None) -> ssl.SSLContext:
    """A TLS 1.2+ server context for the pair; with ``client_ca_file``, client certificates are asked for."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_alpn_protocols(["http/1.1"])
    fd, path = tempfile.mkstemp(prefix="kubesim-serving-", suffix=".pem")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(cert.rstrip(b"\n") + b"\n" + key)
        ctx.load_cert_chain(path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    if client_ca_file:
        ctx.load_verify_locations(client_ca_file)
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx


def peer_subject(peercert: Mapping[str, Any] | None) -> tuple[str, tuple[str, ...]] | None:
    """The CN and the Os of a verified peer certificate (``ssl.getpeercert()``'s form): the user and the groups,
    as Kubernetes reads them; None without a certificate or a CN."""
    if not peercert:
        return None
    name = ""
    groups: list[str] = []
    for rdn in peercert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                name = value
            elif key == "organizationName":
                groups.append(value)
    return (name, tuple(groups)) if name else None
