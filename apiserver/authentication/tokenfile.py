"""Static bearer tokens: kube-apiserver's ``--token-auth-file``.

The file is CSV, one token per line: ``token,user,uid[,"group1,group2"]``
(extra columns are ignored, blank lines skipped). It is read once at start;
a malformed file stops the APIServer with the line at fault, as
kube-apiserver does. kubesim up gives each simulated node its token here
(``system:node:<name>``, group ``system:nodes``).

Lookups are a dict access; nothing here changes after loading.
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Sequence
from pathlib import Path

from apiserver.admission import UserInfo

log = logging.getLogger("apiserver")


class TokenFileError(ValueError):
    pass


class TokenFile:
    """Tokens -> users, from a ``--token-auth-file``."""

    def __init__(self, tokens: dict[str, UserInfo]) -> None:
        self.tokens = tokens

    @classmethod
    def load(cls, path: str | Path) -> TokenFile:
        try:
            text = Path(path).read_text()
        except OSError as err:
            raise TokenFileError(f"cannot read token file '{path}': {err.strerror or err}") from None
        tokens: dict[str, UserInfo] = {}
        for number, record in enumerate(csv.reader(io.StringIO(text)), start=1):
            if not record or not any(field.strip() for field in record):
                continue
            if len(record) < 3:
                raise TokenFileError(f"token file '{path}' must have at least 3 columns (token, user name, "
                                     f"user uid), found {len(record)}")
            token = record[0].strip()
            if not token:
                log.warning("empty token has been found in token file '%s', record number '%d'", path, number)
                continue
            groups = tuple(g.strip() for g in record[3].split(",") if g.strip()) if len(record) >= 4 else ()
            if token in tokens:
                log.warning("duplicate token has been found in token file '%s', record number '%d'", path, number)
            tokens[token] = UserInfo(record[1], groups, record[2])
        return cls(tokens)

    def authenticate_token(self, token: str, audiences: Sequence[str]) -> UserInfo | None:
        return self.tokens.get(token)
