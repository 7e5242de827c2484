"""``Warning`` response headers that are always legal HTTP, built as kube-apiserver builds them.

A warning is ``299 - "<text>"`` (RFC 7234's warn-code, agent and quoted
text). kube-apiserver's ``NewWarningHeader`` quotes the text, escaping
backslashes and double quotes, and refuses text with control characters; the
text of an unknown-field warning is built with Go's ``%q``, so a field name
with control characters arrives already escaped (``unknown field
"\\x01"``). Text outside ASCII travels as its UTF-8 bytes, which RFC 9110
allows in a field value (obs-text).

Starlette encodes header values as Latin-1; :func:`header_value` hands it the
UTF-8 bytes spelled as Latin-1 characters, so what goes on the wire is UTF-8.

Pure functions.
"""

from __future__ import annotations

import unicodedata
from typing import Final

#: kube-apiserver keeps a warning's text to 4 KiB... of the header, not of the body: so do we.
MAX_TEXT: Final = 4096


def go_quote(text: str) -> str:
    """Go's ``strconv.Quote``: double quotes around ``text`` with non-printable characters escaped."""
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch.isprintable() and ch not in "\u2028\u2029":
            out.append(ch)
        else:
            code = ord(ch)
            named = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                     "\v": "\\v"}.get(ch)
            if named is not None:
                out.append(named)
            elif code < 0x80:
                out.append(f"\\x{code:02x}")
            elif code <= 0xFFFF:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in text)


def header_value(text: str) -> str | None:
    """The Warning header value for ``text``, or None when Kubernetes would refuse it (control characters)."""
    if _has_control(text):
        return None
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT]
    quoted = text.replace("\\", "\\\\").replace('"', '\\"')
    value = f'299 - "{quoted}"'
    # Latin-1 characters standing for UTF-8 bytes: starlette writes them out as those bytes.
    return value.encode("utf-8").decode("latin-1")
