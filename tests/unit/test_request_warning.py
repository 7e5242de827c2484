"""Warning headers: Go's quoting of field names, and values that are always legal HTTP."""

from __future__ import annotations

import pytest

from apiserver.request import warning


@pytest.mark.parametrize(("text", "quoted"), [
    pytest.param("spec.foo", '"spec.foo"', id="plain"),
    pytest.param('a"b\\c', '"a\\"b\\\\c"', id="quote-and-backslash"),
    pytest.param("x\x01y\n", '"x\\x01y\\n"', id="control-characters"),
    pytest.param("中文", '"中文"', id="printable-unicode-kept"),
    pytest.param("\u2028\U000e0001", '"\\u2028\\U000e0001"', id="unprintable-unicode"),
])
def test_go_quote(text: str, quoted: str) -> None:
    assert warning.go_quote(text) == quoted


def test_header_value_is_latin1_encodable_utf8_bytes() -> None:
    value = warning.header_value('unknown field "中"')
    assert value is not None
    wire = value.encode("latin-1")
    assert wire.decode("utf-8") == '299 - "unknown field \\"中\\""'
    assert not any(b < 0x20 or b == 0x7F for b in wire)


def test_header_value_refuses_control_characters_as_kubernetes_does() -> None:
    assert warning.header_value("line\nbreak") is None
    assert warning.header_value("tab\there") is None
