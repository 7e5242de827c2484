"""Where the APIServer is and how to authenticate: ``--master``, ``--kubeconfig``.

Every component takes the same two flags as Kubernetes' components do, and
resolves them as client-go's ``BuildConfigFromFlags`` does: the kubeconfig's
current context gives the server, how to trust it and the user's credentials;
``--master``, when given, overrides the server. The files ``kubesim up``
writes are standard kubeconfigs, read here like any other.

Understood, as client-go understands them: plain or TLS URLs; the cluster's
``certificate-authority`` / ``certificate-authority-data`` (else the system's
CAs), ``insecure-skip-tls-verify`` and ``tls-server-name``; the user's client
certificate (``client-certificate(-data)`` with ``client-key(-data)``) and
bearer token (``token`` or ``tokenFile``). File paths are relative to the
kubeconfig's directory. Exec plugins, auth providers and basic auth are not
supported and are rejected with a clear error rather than silently ignored.

Pure functions over files, and :meth:`ClientConfig.ssl_context`, which builds
a fresh ``ssl.SSLContext`` each call (a client builds one and keeps it).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import ssl
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml


class ConfigError(ValueError):
    """The connection settings are missing or cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class TLSConfig:
    """How to trust the server and prove who we are over TLS (PEM bytes, read when the config was loaded)."""

    ca: bytes | None = None
    cert: bytes | None = None
    key: bytes | None = None
    insecure: bool = False
    server_name: str | None = None


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """The APIServer's base URL, the bearer token to send, if any, and the TLS settings."""

    server: str
    token: str | None = None
    tls: TLSConfig = field(default_factory=TLSConfig)

    def __post_init__(self) -> None:
        parts = urlsplit(self.server)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"invalid server URL {self.server!r}: expected http(s)://host[:port]")

    def with_server(self, server: str) -> ClientConfig:
        return replace(self, server=server)

    def httpx_options(self) -> dict[str, Any]:
        """``httpx.Client(**config.httpx_options())``: base URL, TLS settings and bearer token, for CLI tools."""
        ctx = self.ssl_context()
        return {"base_url": self.server, "verify": ctx if ctx is not None else True,
                "headers": {"Authorization": f"Bearer {self.token}"} if self.token else {}}

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS settings as an ``ssl.SSLContext`` for an ``https`` server (None for ``http``)."""
        if urlsplit(self.server).scheme != "https":
            return None
        tls = self.tls
        ctx = ssl.create_default_context(cadata=tls.ca.decode() if tls.ca else None)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_alpn_protocols(["http/1.1"])
        if tls.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if tls.cert is not None and tls.key is not None:
            load_cert_chain(ctx, tls.cert, tls.key)
        return ctx


def load_cert_chain(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """``ctx.load_cert_chain`` from PEM bytes: Python's ssl reads them only from files, so a private temp file."""
    fd, path = tempfile.mkstemp(prefix="kubesim-client-", suffix=".pem")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(cert.rstrip(b"\n") + b"\n" + key)
        try:
            ctx.load_cert_chain(path)
        except ssl.SSLError as err:
            raise ConfigError(f"the client certificate or key cannot be used: {err}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


_UNSUPPORTED_USER_KEYS = ("exec", "auth-provider", "username", "password")


def load_kubeconfig(path: str | os.PathLike[str], *, context: str | None = None) -> ClientConfig:
    """The server, credentials and TLS settings of ``context`` (default: ``current-context``) in a kubeconfig."""
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except OSError as err:
        raise ConfigError(f"cannot read kubeconfig {path}: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"kubeconfig {path} is not valid YAML: {err}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"kubeconfig {path} is not a kubeconfig (expected a mapping)")
    name = context or doc.get("current-context")
    if not name:
        raise ConfigError(f"kubeconfig {path} has no current-context and no context was given")
    base = Path(path).parent
    ctx = _named(doc, "contexts", "context", name, path)
    cluster = _named(doc, "clusters", "cluster", ctx.get("cluster"), path)
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise ConfigError(f'kubeconfig {path}: cluster "{ctx.get("cluster")}" has no server')
    ca = _data_or_file(cluster, "certificate-authority", base, path)
    token: str | None = None
    cert = key = None
    if ctx.get("user"):
        user = _named(doc, "users", "user", ctx["user"], path)
        unsupported = [k for k in _UNSUPPORTED_USER_KEYS if user.get(k)]
        if unsupported:
            raise ConfigError(f'kubeconfig {path}: user "{ctx["user"]}" uses {", ".join(unsupported)}; '
                              "kubesim supports client certificates and bearer tokens (token or tokenFile)")
        token = user.get("token") or None
        if token is None and user.get("tokenFile"):
            token = _read_token_file(base / str(user["tokenFile"]))
        cert = _data_or_file(user, "client-certificate", base, path)
        key = _data_or_file(user, "client-key", base, path)
        if (cert is None) != (key is None):
            raise ConfigError(f'kubeconfig {path}: user "{ctx["user"]}" has a client certificate without its key '
                              "or a key without its certificate")
    tls = TLSConfig(ca=ca, cert=cert, key=key, insecure=bool(cluster.get("insecure-skip-tls-verify")),
                    server_name=cluster.get("tls-server-name") or None)
    return ClientConfig(server=server, token=token, tls=tls)


def config_from_flags(master: str | None, kubeconfig: str | None) -> ClientConfig:
    """client-go's ``BuildConfigFromFlags``: the kubeconfig, with ``--master`` overriding its server.

    Without either flag, the first existing file in ``$KUBECONFIG`` is used.
    """
    kubeconfig = kubeconfig or _from_env()
    if kubeconfig:
        loaded = load_kubeconfig(kubeconfig)
        return loaded.with_server(master) if master else loaded
    if master:
        return ClientConfig(server=master)
    raise ConfigError("neither --kubeconfig nor --master was specified, and $KUBECONFIG is not set")


def _from_env() -> str | None:
    for part in os.environ.get("KUBECONFIG", "").split(os.pathsep):
        if part and Path(part).exists():
            return part
    return None


def _named(doc: dict[str, Any], section: str, field: str, name: Any, path: str | os.PathLike[str]) -> dict[str, Any]:
    for entry in doc.get(section) or ():
        if isinstance(entry, dict) and entry.get("name") == name:
            value = entry.get(field)
            if isinstance(value, dict):
                return value
            raise ConfigError(f'kubeconfig {path}: {field} "{name}" has no {field} section')
    raise ConfigError(f'kubeconfig {path}: {field} "{name}" does not exist')


def _data_or_file(section: dict[str, Any], key: str, base: Path, path: str | os.PathLike[str]) -> bytes | None:
    """``<key>-data`` (base64 PEM) or the file ``<key>`` names, as PEM bytes."""
    data = section.get(f"{key}-data")
    if data:
        try:
            return base64.b64decode(str(data), validate=True)
        except (binascii.Error, ValueError):
            raise ConfigError(f"kubeconfig {path}: {key}-data is not valid base64") from None
    file = section.get(key)
    if file:
        try:
            return (base / str(file)).read_bytes()
        except OSError as err:
            raise ConfigError(f"kubeconfig {path}: cannot read {key} {file}: {err.strerror or err}") from None
    return None


def _read_token_file(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError as err:
        raise ConfigError(f"cannot read token file {path}: {err.strerror or err}") from None
