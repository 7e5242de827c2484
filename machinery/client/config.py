"""Where the APIServer is and how to authenticate: ``--master``, ``--kubeconfig``.

Every component takes the same two flags as Kubernetes' components do, and
resolves them as client-go's ``BuildConfigFromFlags`` does: the kubeconfig's
current context gives the server and the user's bearer token; ``--master``,
when given, overrides the server. The file ``kubesim up`` writes
(``kubesim.kubeconfig``) is a standard kubeconfig, read here like any other.

Only what kubesim serves is understood: plain or TLS URLs (verified with the
system's CAs) and bearer tokens (``token`` or ``tokenFile``). Client
certificates and exec plugins are not supported and are rejected with a clear
error rather than silently ignored.

Pure functions over files; no state.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml


class ConfigError(ValueError):
    """The connection settings are missing or cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """The APIServer's base URL and the bearer token to send, if any."""

    server: str
    token: str | None = None

    def __post_init__(self) -> None:
        parts = urlsplit(self.server)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"invalid server URL {self.server!r}: expected http(s)://host[:port]")


_UNSUPPORTED_USER_KEYS = ("client-certificate", "client-certificate-data", "client-key",
                          "client-key-data", "exec", "auth-provider", "username", "password")


def load_kubeconfig(path: str | os.PathLike[str], *, context: str | None = None) -> ClientConfig:
    """The server and token of ``context`` (default: ``current-context``) in a kubeconfig file."""
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
    ctx = _named(doc, "contexts", "context", name, path)
    cluster = _named(doc, "clusters", "cluster", ctx.get("cluster"), path)
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise ConfigError(f'kubeconfig {path}: cluster "{ctx.get("cluster")}" has no server')
    token: str | None = None
    if ctx.get("user"):
        user = _named(doc, "users", "user", ctx["user"], path)
        unsupported = [k for k in _UNSUPPORTED_USER_KEYS if user.get(k)]
        if unsupported:
            raise ConfigError(f'kubeconfig {path}: user "{ctx["user"]}" uses {", ".join(unsupported)}; '
                              "kubesim only supports bearer tokens (token or tokenFile)")
        token = user.get("token") or None
        if token is None and user.get("tokenFile"):
            token = _read_token_file(Path(path).parent / str(user["tokenFile"]))
    return ClientConfig(server=server, token=token)


def config_from_flags(master: str | None, kubeconfig: str | None) -> ClientConfig:
    """client-go's ``BuildConfigFromFlags``: the kubeconfig, with ``--master`` overriding its server.

    Without either flag, the first existing file in ``$KUBECONFIG`` is used.
    """
    kubeconfig = kubeconfig or _from_env()
    if kubeconfig:
        loaded = load_kubeconfig(kubeconfig)
        return ClientConfig(server=master, token=loaded.token) if master else loaded
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


def _read_token_file(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError as err:
        raise ConfigError(f"cannot read token file {path}: {err.strerror or err}") from None
