"""Query parameters parsed with Go's strconv rules, and the watch duration cap."""

from __future__ import annotations

import random

import pytest

from apiserver.errors import APIError
from apiserver.request import params


@pytest.mark.parametrize(("text", "value"), [
    pytest.param("0", 0, id="zero"),
    pytest.param("-5", -5, id="negative"),
    pytest.param("+7", 7, id="plus-sign"),
    pytest.param("9223372036854775807", 2**63 - 1, id="int64-max"),
    pytest.param("-9223372036854775808", -(2**63), id="int64-min"),
    pytest.param("0000000000000000000000042", 42, id="leading-zeros"),
])
def test_parse_int64_accepts_what_go_accepts(text: str, value: int) -> None:
    assert params.parse_int64(text) == value


@pytest.mark.parametrize(("text", "why"), [
    pytest.param("99999999999999999999", "value out of range", id="beyond-int64"),
    pytest.param("9223372036854775808", "value out of range", id="int64-max-plus-one"),
    pytest.param("9" * 5000, "value out of range", id="more-digits-than-python-converts"),
    pytest.param("1_000", "invalid syntax", id="underscore"),
    pytest.param(" 5", "invalid syntax", id="space"),
    pytest.param("1e3", "invalid syntax", id="exponent"),
    pytest.param("abc", "invalid syntax", id="letters"),
    pytest.param("--1", "invalid syntax", id="double-sign"),
])
def test_parse_int64_refuses_with_strconvs_message(text: str, why: str) -> None:
    with pytest.raises(params.SyntaxOrRange) as err:
        params.parse_int64(text)
    assert str(err.value).startswith('strconv.ParseInt: parsing "') and str(err.value).endswith(why)


def test_int64_param_is_a_400_naming_the_value() -> None:
    with pytest.raises(APIError) as err:
        params.int64_param({"limit": "99999999999999999999"}, "limit")
    assert (err.value.code, err.value.reason) == (400, "BadRequest")
    assert err.value.message == 'strconv.ParseInt: parsing "99999999999999999999": value out of range'
    assert params.int64_param({}, "limit", 0) == 0
    assert params.int64_param({"limit": ""}, "limit", 3) == 3


def test_resource_version_uses_parse_uint() -> None:
    assert params.resource_version("12") == 12
    assert params.resource_version("0") is None
    for bad in ("-1", "x", "1" * 30):
        with pytest.raises(APIError):
            params.resource_version(bad)


@pytest.mark.parametrize(("requested", "low", "high"), [
    pytest.param(None, 1800, 3600, id="default-window"),
    pytest.param(0, 1800, 3600, id="zero-is-default"),
    pytest.param(60, 60, 60, id="shorter-kept"),
    pytest.param(99999999999, 1800, 3600, id="absurd-capped"),
    pytest.param(2**63 - 1, 1800, 3600, id="int64-max-capped"),
    pytest.param(-1, 0, 0, id="negative-ends-at-once"),
])
def test_watch_timeout_is_capped_by_the_min_request_timeout_window(requested: int | None, low: float,
                                                                   high: float) -> None:
    for seed in range(20):
        got = params.watch_timeout(requested, 1800, rand=random.Random(seed))
        assert low <= got <= high
