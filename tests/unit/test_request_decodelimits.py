"""Decoded bodies: depth, int64 range and YAML aliasing limits, through the codec that parses them."""

from __future__ import annotations

import datetime

import pytest

from apiserver import codec
from apiserver.errors import APIError
from apiserver.request import decodelimits

DEEP = decodelimits.MAX_DEPTH + 1


@pytest.mark.parametrize(("body", "ctype", "strict"), [
    pytest.param(b"[" * 2000 + b"]" * 2000, "application/json", False, id="json-2000-deep-orjson"),
    pytest.param(b"[" * 2000 + b"]" * 2000, "application/json", True, id="json-2000-deep-strict"),
    pytest.param(b"[" * DEEP + b"]" * DEEP, "application/json", False, id="json-just-too-deep"),
    pytest.param(b'{"a":' * 1200 + b"1" + b"}" * 1200, "application/json", True, id="json-objects-deep"),
    pytest.param(b"[" * 2000 + b"]" * 2000, "application/yaml", False, id="yaml-flow-deep"),
    pytest.param(b"- " * 300 + b"x", "application/yaml", False, id="yaml-block-deep"),
])
def test_deep_nesting_is_a_400(body: bytes, ctype: str, strict: bool) -> None:
    with pytest.raises(APIError) as err:
        codec.parse_document(body, ctype, duplicates=[] if strict else None)
    assert err.value.code == 400 and "exceeded max depth" in err.value.message


@pytest.mark.parametrize(("body", "ctype", "strict"), [
    pytest.param(b'{"a": 99999999999999999999}', "application/json", False, id="orjson-reads-a-float"),
    pytest.param(b'{"a": 99999999999999999999}', "application/json", True, id="json-reads-an-int"),
    pytest.param(b'{"a": 18446744073709551615}', "application/json", False, id="uint64-max"),
    pytest.param(b'{"a": -9223372036854775809}', "application/json", True, id="below-int64"),
    pytest.param(b'{"a": 1e300}', "application/json", False, id="huge-exponent"),
    pytest.param(b"a: 99999999999999999999", "application/yaml", False, id="yaml"),
])
def test_numbers_beyond_int64_are_a_400(body: bytes, ctype: str, strict: bool) -> None:
    with pytest.raises(APIError) as err:
        codec.parse_document(body, ctype, duplicates=[] if strict else None)
    assert err.value.code == 400
    assert err.value.message.startswith("json: cannot unmarshal number") and "of type int64" in err.value.message


@pytest.mark.parametrize("ctype", ["application/json", "application/yaml"])
def test_integers_longer_than_python_converts_are_a_400(ctype: str) -> None:
    for strict in (False, True):
        with pytest.raises(APIError) as err:
            codec.parse_document(b'{"a": ' + b"9" * 5000 + b"}", ctype, duplicates=[] if strict else None)
        assert err.value.code == 400


def test_int64_bounds_themselves_pass() -> None:
    body = b'{"a": 9223372036854775807, "b": -9223372036854775808, "c": [1, 2.5]}'
    for strict in (False, True):
        assert codec.parse_document(body, "application/json", duplicates=[] if strict else None) == {
            "a": 2**63 - 1, "b": -(2**63), "c": [1, 2.5]}


def test_billion_laughs_is_refused() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        prev = chr(ord("a") + i - 1)
        cur = chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    with pytest.raises(APIError) as err:
        codec.parse_document("\n".join(lines).encode(), "application/yaml")
    assert err.value.code == 400 and err.value.message == "yaml: document contains excessive aliasing"


def test_yaml_only_values_become_json() -> None:
    body = b"2: two\nfalse: x\nwhen: 2001-12-14t21:59:43.10-05:00\nday: 2002-12-14\nbin: !!binary aGk=\n" \
           b"s: !!set {x, y}\n"
    doc = codec.parse_document(body, "application/yaml")
    assert doc["2"] == "two" and doc["false"] == "x"
    assert doc["when"] == "2001-12-15T02:59:43.100000Z"
    assert doc["day"] == "2002-12-14"
    assert doc["bin"] == "aGk="
    assert doc["s"] == {"x": None, "y": None}


def test_checked_leaves_ordinary_objects_alone() -> None:
    pod = {"metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "ports": [
        {"containerPort": 80}]}]}}
    assert decodelimits.checked(pod, budget=1000) == pod
    assert not decodelimits.needs_walk(b'{"metadata":{"name":"p"},"spec":{"replicas":3}}')
    assert decodelimits.needs_walk(b'{"a": 12345678901234567890}')
    assert isinstance(decodelimits._json_scalar(datetime.date(2020, 1, 2)), str)


@pytest.mark.parametrize(("body", "found"), [
    pytest.param(b'{"metadata":{"name":"d","name":"e"}}', ["name"], id="nested"),
    pytest.param(b'{"a":1,"b":{"a":2},"c":[{"a":3,"a":4}],"a":5}', ["a", "a"], id="each-repetition"),
    pytest.param(b'{"a" : 1, "a": 2}', ["a"], id="spaced-colon"),
    pytest.param(b'{"note":"say \\"a\\": b","x":1}', [], id="escaped-key-lookalike-in-a-string"),
    pytest.param(b'{"note":"say \\"a\\": b","x":1,"x":2}', ["x"], id="lookalike-and-a-real-one"),
    pytest.param(b'{"k\\\\":1,"k\\\\":2}', ["k\\"], id="key-ending-in-a-backslash"),
    pytest.param(b'{"a":1,"b":[{"c":2},{"c":3}]}', [], id="same-key-in-sibling-objects"),
    pytest.param(b'{"":1,"":2}', [""], id="empty-keys"),
])
def test_duplicate_keys_are_found_whatever_the_text_around_them(body: bytes, found: list[str]) -> None:
    """The count of ``":`` decides when a second, key-by-key decoding is needed: it must never miss one."""
    duplicates: list[str] = []
    doc = codec.parse_document(body, "application/json", duplicates=duplicates)
    assert duplicates == found
    assert codec.parse_document(body, "application/json") == doc


def test_the_last_of_duplicate_values_is_kept() -> None:
    assert codec.parse_document(b'{"a":1,"a":2}', "application/json", duplicates=[]) == {"a": 2}


def test_strict_decoding_reports_duplicates_then_unknown_fields() -> None:
    with pytest.raises(APIError) as err:
        codec.report_strict_decoding("Strict", [], ["paused"], ["spec.unknown1"])
    assert err.value.code == 400
    assert err.value.message == 'strict decoding error: duplicate field "paused", unknown field "spec.unknown1"'
    warnings: list[str] = []
    codec.report_strict_decoding("Warn", warnings, ["paused"], ["spec.unknown1"])
    assert warnings == ['duplicate field "paused"', 'unknown field "spec.unknown1"']
    codec.report_strict_decoding("Ignore", warnings, ["x"])
    assert len(warnings) == 2


def test_numbers_inside_strings_do_not_make_a_walk() -> None:
    """uids and digests hold digit runs and "e": only numbers (after ':', '[' or ',') can break int64."""
    assert not decodelimits.needs_walk(b'{"uid":"3e5a1c00-1111-2222-3333-444455556666",'
                                       b'"image":"x@sha256:ae2f30a8b0e2c4e1f3d4","v":"1234567890123456789012"}')
    assert decodelimits.needs_walk(b'{"a":[1, 2e5]}') and decodelimits.needs_walk(b'{"a": -1.5E+30}')
    assert decodelimits.needs_walk(b'{"a":1234567890123456789}')
