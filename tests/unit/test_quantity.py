"""Quantities and resource arithmetic, after apimachinery's and component-helpers' tables."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.client import V1Node, V1Pod

from machinery.api.quantity import (
    add_resources,
    fits,
    format_quantity,
    insufficient_resources,
    milli_value,
    node_allocatable,
    parse_quantity,
    pod_limits,
    pod_requests,
    resource_list,
    subtract_resources,
    value,
)

FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
SUFFIX_ERROR = "unable to parse quantity's suffix"
INT64_MAX = (1 << 63) - 1
KI, MI, GI = 1024, 1024**2, 1024**3

# apimachinery's TestQuantityParse table: text -> exact value.
PARSE_TABLE = [
    ("0", "0"), ("0n", "0"), ("0u", "0"), ("0m", "0"), ("0Ki", "0"), ("0k", "0"), ("0Mi", "0"), ("0M", "0"),
    ("0Gi", "0"), ("0G", "0"), ("0Ti", "0"), ("0T", "0"),
    ("1", "1"),
    ("1Ki", "1024"), ("8Ki", str(8 * KI)), ("7Mi", str(7 * MI)), ("6Gi", str(6 * GI)), ("5Ti", str(5 * 1024**4)),
    ("4Pi", str(4 * 1024**5)), ("3Ei", str(3 * 1024**6)), ("10Ti", str(10 * 1024**4)),
    ("100Ti", str(100 * 1024**4)),
    ("5n", "5e-9"), ("4u", "4e-6"), ("3m", "0.003"), ("9", "9"), ("8k", "8000"), ("50k", "5e4"), ("7M", "7e6"),
    ("6G", "6e9"), ("5T", "5e12"), ("40T", "4e13"), ("300T", "3e14"), ("2P", "2e15"), ("1E", "1e18"),
    ("1E-3", "0.001"), ("1e3", "1000"), ("1E6", "1e6"), ("1e9", "1e9"), ("1E12", "1e12"), ("1e15", "1e15"),
    ("1E18", "1e18"), ("1e14", "1e14"), ("1e13", "1e13"), ("100.035k", "100035"),
    ("0.001", "0.001"), ("0.0005k", "0.5"), ("0.005", "0.005"), ("0.05", "0.05"), ("0.5", "0.5"),
    ("0.00050k", "0.5"), ("0.00500", "0.005"), ("0.05000", "0.05"), ("0.50000", "0.5"), ("0.5e0", "0.5"),
    ("0.5e-1", "0.05"), ("0.5e-2", "0.005"), ("10.035M", "10035000"),
    ("1.2e3", "1200"), ("1.3E+6", "1.3e6"), ("1.40e9", "1.4e9"), ("1.53E12", "1.53e12"), ("1.6e15", "1.6e15"),
    ("1.7E18", "1.7e18"),
    ("9.01", "9.01"), ("8.1k", "8100"), ("7.123456M", "7123456"), ("6.987654321G", "6987654321"),
    ("5.444T", "5.444e12"), ("40.1T", "4.01e13"), ("300.2T", "3.002e14"), ("2.5P", "2.5e15"), ("1.01E", "1.01e18"),
    ("3.001n", "4e-9"), ("1.1E-9", "2e-9"), ("0.0000000001", "1e-9"), ("0.0000000005", "1e-9"),
    ("0.00000000050", "1e-9"), ("0.5e-9", "1e-9"), ("0.9n", "1e-9"), ("0.00000012345", "124e-9"),
    ("0.00000012354", "124e-9"),
    ("9Ei", str(INT64_MAX)), ("9223372036854775807Ki", str(INT64_MAX)), ("12E", "12e18"),
    ("100.035Ki", "102435.84"), ("0.5Mi", str(MI // 2)), ("0.05Gi", "53687091.2"), ("0.025Ti", "27487790694.4"),
    ("0.000000000001Ki", "2e-9"), (".001", "0.001"), (".0001k", "0.1"), ("1.", "1"), ("1.G", "1e9"),
    ("+", "0"), ("-", "0"), (".", "0"), ("-000", "0"),
]


@pytest.mark.parametrize(("text", "expected"), [pytest.param(t, e, id=t) for t, e in PARSE_TABLE])
def test_parse(text: str, expected: str) -> None:
    want = Decimal(expected)
    assert parse_quantity(text) == want
    if text[0] not in "+-":
        # Kubernetes' table also holds with an explicit sign (rounding is away from zero).
        assert parse_quantity("+" + text) == want
        assert parse_quantity("-" + text) == -want


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("", FORMAT_ERROR, id="empty"),
    pytest.param("1.1.M", FORMAT_ERROR, id="two-points"),
    pytest.param("1+1.0M", FORMAT_ERROR, id="plus-inside"),
    pytest.param("0.1mi", SUFFIX_ERROR, id="lowercase-binary"),
    pytest.param("0.1am", FORMAT_ERROR, id="unknown-letter"),
    pytest.param("aoeu", FORMAT_ERROR, id="word"),
    pytest.param(".5i", SUFFIX_ERROR, id="bare-i"),
    pytest.param("1i", SUFFIX_ERROR, id="one-i"),
    pytest.param("-3.01i", SUFFIX_ERROR, id="negative-i"),
    pytest.param("-3.01e-", SUFFIX_ERROR, id="exponent-without-digits"),
    pytest.param("1e", SUFFIX_ERROR, id="bare-e"),
    pytest.param("1Ki5", SUFFIX_ERROR, id="digits-after-binary"),
    pytest.param("1e9223372036854775808", SUFFIX_ERROR, id="exponent-beyond-int64"),
    pytest.param(" 1", FORMAT_ERROR, id="leading-space"),
    pytest.param("1 ", FORMAT_ERROR, id="trailing-space"),
    pytest.param("1_000", FORMAT_ERROR, id="underscore"),
    pytest.param("1MiB", FORMAT_ERROR, id="byte-unit"),
    pytest.param("Infinity", FORMAT_ERROR, id="infinity"),
    pytest.param("NaN", FORMAT_ERROR, id="nan"),
    pytest.param(float("nan"), FORMAT_ERROR, id="float-nan"),
    pytest.param(float("inf"), FORMAT_ERROR, id="float-inf"),
    pytest.param(True, FORMAT_ERROR, id="bool"),
])
def test_parse_errors(text: Any, message: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_quantity(text)
    assert str(err.value) == message
    with pytest.raises(ValueError):
        milli_value(text)


@pytest.mark.parametrize("amount", [Decimal("NaN"), Decimal("Infinity"), Decimal("-Infinity")])
def test_non_finite_decimals_are_errors(amount: Decimal) -> None:
    with pytest.raises(ValueError, match="^quantities must match"):
        milli_value(amount)
    with pytest.raises(ValueError, match="^quantities must match"):
        value(amount)


@pytest.mark.parametrize(("number", "expected"), [
    pytest.param(1, "1", id="int"),
    pytest.param(-3, "-3", id="negative-int"),
    pytest.param(0.1, "0.1", id="float-as-written"),
    pytest.param(1e-12, "1e-9", id="tiny-float-rounds-up"),
    pytest.param(2.5e3, "2500", id="float-exponent"),
    pytest.param(Decimal("1E+3"), "1000", id="decimal"),
    pytest.param("1e2147483648", "1e-9", id="exponent-wraps-like-int32"),
])
def test_parse_numbers(number: Any, expected: str) -> None:
    assert parse_quantity(number) == Decimal(expected)


@pytest.mark.parametrize(("quantity", "milli", "whole"), [
    pytest.param("100m", 100, 1, id="100m"),
    pytest.param("1", 1000, 1, id="one"),
    pytest.param("1.5", 1500, 2, id="one-and-a-half"),
    pytest.param("0.5m", 1, 1, id="half-milli-rounds-up"),
    pytest.param("1.1m", 2, 1, id="fraction-of-milli"),
    pytest.param("1n", 1, 1, id="nano"),
    pytest.param("-1.5m", -2, -1, id="negative-rounds-away-from-zero"),
    pytest.param("-1.5", -1500, -2, id="negative-whole"),
    pytest.param("1Ki", 1024000, 1024, id="kibi"),
    pytest.param("128Mi", 128 * MI * 1000, 128 * MI, id="mebi"),
    pytest.param("1e100", INT64_MAX * 1000, INT64_MAX, id="saturates"),
    pytest.param("-1e100", -INT64_MAX * 1000, -INT64_MAX, id="saturates-negative"),
    pytest.param("1e2147483647", INT64_MAX * 1000, INT64_MAX, id="huge-exponent-does-not-hang"),
    pytest.param("8Ei", INT64_MAX * 1000, INT64_MAX, id="binary-capped-at-parse"),
    pytest.param(2, 2000, 2, id="int"),
    pytest.param(0.25, 250, 1, id="float"),
    pytest.param(Decimal("2.5"), 2500, 3, id="decimal-taken-as-parsed"),
    pytest.param(Decimal("0.0001"), 1, 1, id="decimal-rounds-up"),
])
def test_milli_value_and_value(quantity: Any, milli: int, whole: int) -> None:
    assert milli_value(quantity) == milli
    assert value(quantity) == whole


@pytest.mark.parametrize(("milli", "resource", "text"), [
    pytest.param(0, "cpu", "0", id="zero"),
    pytest.param(100, "cpu", "100m", id="100m"),
    pytest.param(1000, "cpu", "1", id="one-cpu"),
    pytest.param(1500, "cpu", "1500m", id="one-and-a-half-cpu"),
    pytest.param(2000, "cpu", "2", id="two-cpus"),
    pytest.param(10_000, "cpu", "10", id="ten-cpus"),
    pytest.param(1_000_000, "cpu", "1k", id="kilo"),
    pytest.param(1_500_000, "cpu", "1500", id="one-and-a-half-kilo"),
    pytest.param(1_000_000_000, "cpu", "1M", id="mega"),
    pytest.param(-100, "cpu", "-100m", id="negative"),
    pytest.param(110_000, "pods", "110", id="pods"),
    pytest.param(2000, "example.com/gpu", "2", id="extended"),
    pytest.param(10**25, "cpu", "10000E", id="beyond-exa"),
    pytest.param(128 * MI * 1000, "memory", "128Mi", id="128Mi"),
    pytest.param(GI * 1000, "memory", "1Gi", id="1Gi"),
    pytest.param(1536 * 1000, "memory", "1536", id="not-a-power-of-1024"),
    pytest.param(1500 * MI * 1000, "memory", "1500Mi", id="1500Mi"),
    pytest.param(512 * 1000, "memory", "512", id="below-1Ki-is-decimal"),
    pytest.param(1000 * 1000, "memory", "1k", id="1000-bytes"),
    pytest.param(10**9 * 1000, "memory", "1000000000", id="decimal-gigabyte-is-binary-si"),
    pytest.param(500, "memory", "500m", id="half-byte"),
    pytest.param(-GI * 1000, "memory", "-1Gi", id="negative-memory"),
    pytest.param(7 * 1024**6 * 1000, "memory", "7Ei", id="7Ei"),
    pytest.param(1024**7 * 1000, "memory", "1024Ei", id="beyond-Ei"),
    pytest.param(2 * MI * 1000, "hugepages-2Mi", "2Mi", id="hugepages"),
    pytest.param(10 * GI * 1000, "ephemeral-storage", "10Gi", id="ephemeral-storage"),
])
def test_format_quantity(milli: int, resource: str, text: str) -> None:
    assert format_quantity(milli, resource) == text
    if abs(milli) <= INT64_MAX * 1000:
        assert milli_value(text) == milli


@given(st.integers(min_value=-(10**15), max_value=10**15),
       st.sampled_from(["cpu", "memory", "example.com/gpu", "hugepages-1Gi"]))
def test_format_round_trips(milli: int, resource: str) -> None:
    assert milli_value(format_quantity(milli, resource)) == milli


@given(st.from_regex(r"[+-]?[0-9]{0,6}(\.[0-9]{0,6})?([numkMGTPE]|[KMGTPE]i|e-?[0-9])?", fullmatch=True))
def test_parse_accepts_the_grammar(text: str) -> None:
    if not text:
        return
    # Every parsed value is a whole number of nano-units.
    exponent = parse_quantity(text).as_tuple().exponent
    assert isinstance(exponent, int) and exponent >= -9


def test_resource_list_and_arithmetic() -> None:
    node = resource_list({"cpu": "4", "memory": "8Gi", "pods": "110", "example.com/gpu": 2})
    assert node == {"cpu": 4000, "memory": 8 * GI * 1000, "pods": 110_000, "example.com/gpu": 2000}
    assert resource_list(None) == {}
    used = {"cpu": 1500, "example.com/fpga": 1000}
    assert add_resources(node, used) == {**node, "cpu": 5500, "example.com/fpga": 1000}
    assert subtract_resources(node, used) == {**node, "cpu": 2500, "example.com/fpga": -1000}
    assert node["cpu"] == 4000, "inputs are not modified"


@pytest.mark.parametrize(("requests", "used", "short"), [
    pytest.param({"cpu": 1000}, {}, [], id="fits"),
    pytest.param({"cpu": 4000}, {}, [], id="exactly-fits"),
    pytest.param({"cpu": 4001}, {}, ["cpu"], id="cpu"),
    pytest.param({"cpu": 1000}, {"cpu": 3500}, ["cpu"], id="cpu-used"),
    pytest.param({"example.com/gpu": 1000, "memory": 9 * GI * 1000, "cpu": 5000}, {}, ["cpu", "memory",
                 "example.com/gpu"], id="kubernetes-order"),
    pytest.param({"ephemeral-storage": 1, "b.io/x": 1, "a.io/x": 1, "memory": GI}, {},
                 ["ephemeral-storage", "a.io/x", "b.io/x"], id="extended-by-name"),
    pytest.param({"cpu": 0, "memory": 0}, {"cpu": 9000}, [], id="zero-request-fits-overcommitted-node"),
    pytest.param({}, {"cpu": 9000}, [], id="no-requests"),
])
def test_fits_and_insufficient(requests: dict[str, int], used: dict[str, int], short: list[str]) -> None:
    allocatable = {"cpu": 4000, "memory": 8 * GI * 1000, "pods": 110_000}
    assert insufficient_resources(requests, allocatable, used) == short
    assert fits(requests, allocatable, used) is (not short)
    if not used:
        assert insufficient_resources(requests, allocatable) == short
        assert fits(requests, allocatable) is (not short)


def container(name: str, requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None,
              restart_policy: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "nginx"}
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None}
    if resources:
        c["resources"] = resources
    if restart_policy:
        c["restartPolicy"] = restart_policy
    return c


def pod(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None,
        overhead: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers}
    if init:
        spec["initContainers"] = init
    if overhead:
        spec["overhead"] = overhead
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


@pytest.mark.parametrize(("the_pod", "expected"), [
    pytest.param(pod([]), {}, id="no-containers"),
    pytest.param(pod([container("a")]), {}, id="no-requests"),
    pytest.param(pod([container("a", {"cpu": "100m", "memory": "128Mi"}), container("b", {"cpu": "1"})]),
                 {"cpu": 1100, "memory": 128 * MI * 1000}, id="containers-summed"),
    pytest.param(pod([container("a", {"cpu": "1"})], [container("i", {"cpu": "2"})]), {"cpu": 2000},
                 id="larger-init-container"),
    pytest.param(pod([container("a", {"cpu": "2"}), container("b", {"cpu": "1"})], [container("i", {"cpu": "2"})]),
                 {"cpu": 3000}, id="larger-containers"),
    pytest.param(pod([container("a", {"cpu": "1"})], [container("i", {"memory": "1Gi"})]),
                 {"cpu": 1000, "memory": GI * 1000}, id="init-floor-per-resource"),
    pytest.param(pod([container("a", {"cpu": "1"})], [container("s", {"cpu": "1"}, restart_policy="Always")]),
                 {"cpu": 2000}, id="restartable-init-container"),
    pytest.param(pod([container("a", {"cpu": "1"})], [
        container("init-1", {"cpu": "5"}),
        container("restartable-init-1", {"cpu": "1"}, restart_policy="Always"),
        container("restartable-init-2", {"cpu": "2"}, restart_policy="Always"),
        container("restartable-init-3", {"cpu": "3"}, restart_policy="Always"),
    ]), {"cpu": 7000}, id="multiple-restartable-init-containers"),
    pytest.param(pod([container("a", {"cpu": "1"})], [
        container("init-1", {"cpu": "5"}),
        container("restartable-init-1", {"cpu": "1"}, restart_policy="Always"),
        container("restartable-init-2", {"cpu": "2"}, restart_policy="Always"),
        container("init-2", {"cpu": "5"}),
        container("restartable-init-3", {"cpu": "3"}, restart_policy="Always"),
    ]), {"cpu": 8000}, id="multiple-restartable-and-regular-init-containers"),
    pytest.param(pod([container("a", {"cpu": "100"})], [
        container("restartable-init-1", {"cpu": "10"}, restart_policy="Always"),
        container("init-1", {"cpu": "200"}),
    ]), {"cpu": 210_000}, id="restartable-init-init-and-regular"),
    pytest.param(pod([container("a", {"cpu": "1", "memory": "1Gi"})], overhead={"cpu": "250m", "memory": "120Mi"}),
                 {"cpu": 1250, "memory": (GI + 120 * MI) * 1000}, id="overhead-included"),
    pytest.param(pod([container("a", {"cpu": "1"}), container("b", {"example.com/gpu": "1", "hugepages-2Mi": "4Mi"})],
                     [container("i", {"example.com/gpu": "2"})]),
                 {"cpu": 1000, "example.com/gpu": 2000, "hugepages-2Mi": 4 * MI * 1000}, id="extended-and-hugepages"),
])
def test_pod_requests(the_pod: dict[str, Any], expected: dict[str, int]) -> None:
    assert pod_requests(the_pod) == expected
    assert pod_requests(V1Pod.model_validate(the_pod)) == expected


@pytest.mark.parametrize(("the_pod", "expected"), [
    pytest.param(pod([container("a")]), {"cpu": 100, "memory": 200 * MI * 1000}, id="defaults-for-missing"),
    pytest.param(pod([container("a", {"cpu": "0", "memory": "0"})]), {"cpu": 0, "memory": 0},
                 id="explicit-zero-kept"),
    pytest.param(pod([container("a", {"cpu": "1"}), container("b", {"memory": "1Gi"})]),
                 {"cpu": 1100, "memory": (GI + 200 * MI) * 1000}, id="per-container"),
    pytest.param(pod([container("a", {"cpu": "1"})], [container("i")]),
                 {"cpu": 1000, "memory": 200 * MI * 1000}, id="init-containers-too"),
])
def test_pod_requests_non_zero(the_pod: dict[str, Any], expected: dict[str, int]) -> None:
    assert pod_requests(the_pod, non_zero=True) == expected


def test_pod_limits() -> None:
    the_pod = pod([container("a", limits={"cpu": "1"}), container("b", limits={"cpu": "500m", "memory": "1Gi"})],
                  [container("i", limits={"memory": "2Gi"}), container("s", limits={"cpu": "2"}, restart_policy="Always")],
                  overhead={"cpu": "250m", "memory": "100Mi", "example.com/x": "1"})
    expected = {"cpu": 3500 + 250, "memory": (2 * GI + 100 * MI) * 1000}
    assert pod_limits(the_pod) == expected
    assert pod_limits(V1Pod.model_validate(the_pod)) == expected
    # Overhead only raises limits that are set and non-zero.
    assert pod_limits(pod([container("a", limits={"cpu": "0"})], overhead={"cpu": "1", "memory": "1Mi"})) == {"cpu": 0}


def test_pod_requests_bad_quantity() -> None:
    with pytest.raises(ValueError, match="^quantities must match"):
        pod_requests(pod([container("a", {"cpu": "one"})]))


def test_pod_without_spec() -> None:
    assert pod_requests({}) == {} and pod_limits(V1Pod()) == {}


@pytest.mark.parametrize(("status", "expected"), [
    pytest.param({"capacity": {"cpu": "4", "pods": "110"}, "allocatable": {"cpu": "3800m", "pods": "110"}},
                 {"cpu": 3800, "pods": 110_000}, id="allocatable"),
    pytest.param({"capacity": {"cpu": "4", "memory": "16Gi"}}, {"cpu": 4000, "memory": 16 * GI * 1000},
                 id="capacity-when-no-allocatable"),
    pytest.param({}, {}, id="nothing-reported"),
])
def test_node_allocatable(status: dict[str, Any], expected: dict[str, int]) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": status}
    assert node_allocatable(node) == expected
    assert node_allocatable(V1Node.model_validate(node)) == expected
    assert node_allocatable(V1Node()) == {}
