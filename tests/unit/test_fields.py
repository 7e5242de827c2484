"""Field selectors: terms, escaping, matching and messages, checked against Kubernetes' own tables."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from machinery.api import fields
from machinery.api.fields import FieldRequirement, FieldSelector, escape_value, unescape_value
from machinery.api.labels import Operator, SelectorError


@pytest.mark.parametrize(("text", "canonical"), [
    pytest.param("x=a,y=b,z=c", "x=a,y=b,z=c", id="equals"),
    pytest.param("", "", id="empty"),
    pytest.param("x!=a,y=b", "x!=a,y=b", id="not-equals"),
    pytest.param(r"x=a||y\=b", r"x=a||y\=b", id="escaped-equals"),
    pytest.param(r"x=a\=\=b", r"x=a\=\=b", id="two-escaped-equals"),
    pytest.param("x==y", "x=y", id="double-equals-normalized"),
    pytest.param("x=a,a=x", "a=x,x=a", id="sorted"),
    pytest.param("b!=1,a==2,c=3", "a=2,b!=1,c=3", id="sorted-mixed"),
    pytest.param("a=b,", "a=b", id="trailing-comma"),
    pytest.param(",a=b", "a=b", id="leading-comma"),
    pytest.param("=", "", id="term-without-field-or-value-dropped"),
    pytest.param("a=", "a=", id="empty-value"),
    pytest.param(r"k=\,,k2=v2", r"k2=v2,k=\,", id="escaped-comma-sorts-raw"),
    pytest.param(r"k=\\,k2=v2", r"k2=v2,k=\\", id="escaped-backslash"),
    pytest.param("함=수,목=록", "목=록,함=수", id="multi-byte"),
    pytest.param("a = b", "a = b", id="spaces-kept"),
    pytest.param("a!b=c", "a!b=c", id="bang-in-field"),
])
def test_parse_canonical_string(text: str, canonical: str) -> None:
    assert str(FieldSelector.parse(text)) == canonical


@pytest.mark.parametrize(("text", "requirements"), [
    pytest.param("spec.nodeName=node-1", [("spec.nodeName", Operator.EQUALS, "node-1")], id="equals"),
    pytest.param("status.phase!=Failed", [("status.phase", Operator.NOT_EQUALS, "Failed")], id="not-equals"),
    pytest.param("b==2", [("b", Operator.EQUALS, "2")], id="double-equals"),
    pytest.param(r"k=\\\a", None, id="bad-escape"),
    pytest.param(r"k=\\\=\,", [("k", Operator.EQUALS, "\\=,")], id="all-escapes"),
    pytest.param("a = b", [("a ", Operator.EQUALS, " b")], id="no-trimming"),
])
def test_requirements(text: str, requirements: list[tuple[str, Operator, str]] | None) -> None:
    if requirements is None:
        with pytest.raises(SelectorError):
            FieldSelector.parse(text)
        return
    assert FieldSelector.parse(text).requirements == tuple(FieldRequirement(*r) for r in requirements)


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("x=a||y=b", "invalid field selector: unescaped character in value: 61", id="unescaped-equals"),
    pytest.param("x==a==b", "invalid field selector: unescaped character in value: 61", id="two-operators"),
    pytest.param("x=a,b", "invalid selector: 'x=a,b'; can't understand 'b'", id="term-without-operator"),
    pytest.param("x in (a)", "invalid selector: 'x in (a)'; can't understand 'x in (a)'", id="set-syntax"),
    pytest.param("x in (a,b,c)", "invalid selector: 'x in (a,b,c)'; can't understand 'b'", id="set-syntax-sorted"),
    pytest.param("x", "invalid selector: 'x'; can't understand 'x'", id="exists-syntax"),
    pytest.param(r"k=\a", r"invalid field selector: invalid escape sequence: \a", id="unknown-escape"),
    pytest.param("k=\\", "invalid field selector: invalid escape sequence: \\", id="orphan-backslash"),
    pytest.param("k=\\\\\\", "invalid field selector: invalid escape sequence: \\", id="odd-backslashes"),
])
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as err:
        FieldSelector.parse(text)
    assert str(err.value) == message


@pytest.mark.parametrize(("text", "fields", "expected"), [
    pytest.param("", {"x": "y"}, True, id="empty-matches-all"),
    pytest.param("x=y", {"x": "y"}, True, id="equals"),
    pytest.param("x=y,z=w", {"x": "y", "z": "w"}, True, id="two-equals"),
    pytest.param("x!=y,z!=w", {"x": "z", "z": "a"}, True, id="two-not-equals"),
    pytest.param("notin=in", {"notin": "in"}, True, id="keywords-are-plain"),
    pytest.param("x=y", {"x": "z"}, False, id="equals-other"),
    pytest.param("x=y,z=w", {"x": "w", "z": "w"}, False, id="one-of-two"),
    pytest.param("x!=y,z!=w", {"x": "z", "z": "w"}, False, id="not-equals-hit"),
    pytest.param("foo=bar,baz=blah", {"foo": "bar", "baz": "blah"}, True, id="set"),
    pytest.param(r"complex=\=value\\\,\\", {"complex": "=value\\,\\"}, True, id="escaped-value"),
    pytest.param("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False, id="extra-term"),
    pytest.param("status.podIP=", {}, True, id="missing-field-is-empty"),
    pytest.param("spec.nodeName!=node-1", {}, True, id="missing-field-differs"),
    pytest.param("spec.nodeName=node-1", {}, False, id="missing-field-not-equal"),
])
def test_matches(text: str, fields: dict[str, str], expected: bool) -> None:
    assert FieldSelector.parse(text).matches(fields) is expected


@pytest.mark.parametrize(("raw", "escaped"), [
    pytest.param("", "", id="empty"),
    pytest.param("a", "a", id="plain"),
    pytest.param("=", r"\=", id="equals"),
    pytest.param(",", r"\,", id="comma"),
    pytest.param("\\", "\\\\", id="backslash"),
    pytest.param(r"\=\,\\", r"\\\=\\\,\\\\", id="all"),
])
def test_escape_round_trip(raw: str, escaped: str) -> None:
    assert escape_value(raw) == escaped
    assert unescape_value(escaped) == raw


def test_everything_and_introspection() -> None:
    everything = FieldSelector.everything()
    assert everything.empty() and everything.matches({}) and str(everything) == ""
    assert FieldSelector.parse("") == everything
    sel = FieldSelector.parse("spec.nodeName=node-1,status.phase!=Failed")
    assert not sel.empty()
    assert sel.requires_exact_match("spec.nodeName") == "node-1"
    assert sel.requires_exact_match("status.phase") is None
    assert sel.requires_exact_match("metadata.name") is None
    assert sel == FieldSelector.parse("status.phase!=Failed,spec.nodeName==node-1")
    assert hash(sel) == hash(FieldSelector.parse("status.phase!=Failed,spec.nodeName=node-1"))
    assert repr(sel) == "FieldSelector.parse('spec.nodeName=node-1,status.phase!=Failed')"


_fields = st.from_regex(r"[a-z][a-zA-Z.]{0,12}", fullmatch=True)
_values = st.text(alphabet=st.sampled_from("ab1-.=,\\ 함"), max_size=8)


@given(st.text(max_size=20))
def test_escaping_round_trips(value: str) -> None:
    assert unescape_value(escape_value(value)) == value


@given(st.lists(st.tuples(_fields, st.booleans(), _values), max_size=5))
def test_string_form_parses_back(terms: list[tuple[str, bool, str]]) -> None:
    text = ",".join(f"{f}{'=' if eq else '!='}{escape_value(v)}" for f, eq, v in terms)
    selector = FieldSelector.parse(text)
    assert FieldSelector.parse(str(selector)) == selector
    fields = {f: v for f, _, v in terms}
    expected = all((fields.get(f, "") == v) is eq for f, eq, v in terms)
    assert selector.matches(fields) is expected


def test_docstring_examples() -> None:
    assert doctest.testmod(fields).failed == 0
