"""Each simulated node's own identity: ``system:node:<name>`` in ``system:nodes``, by bearer token.

A real kubelet authenticates with a client certificate of its node. kubelet_sim
runs thousands of nodes over one shared pool of connections, where a
certificate would name the whole connection, so each node authenticates with
a token instead (``--node-tokens``: a file in kube-apiserver's
``--token-auth-file`` format, ``token,user,uid,groups``, which ``kubesim up``
writes for both). The APIServer's Node authorizer and NodeRestriction then
see ``system:node:<name>`` exactly as they would from its certificate, and
each node may touch only its own Node, Lease and Pods.

Pure functions over the file; read once at start.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Final

NODE_USER_PREFIX: Final = "system:node:"


class CredentialsError(ValueError):
    pass


def load_node_tokens(path: str | Path) -> dict[str, str]:
    """Node name -> token, from the lines of users ``system:node:<name>``."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise CredentialsError(f"cannot read node tokens {path}: {err.strerror or err}") from None
    tokens: dict[str, str] = {}
    for row in csv.reader(io.StringIO(text)):
        if len(row) >= 2 and row[1].strip().startswith(NODE_USER_PREFIX) and row[0].strip():
            tokens[row[1].strip()[len(NODE_USER_PREFIX):]] = row[0].strip()
    return tokens
