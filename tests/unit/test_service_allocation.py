"""The pure parts of Service allocation: bitmaps, ranges, IP families, and the fields kept in step on writes.

The etcd side (reservations, two APIServers, restarts, exhaustion) is in
``tests/integration/test_service_allocation.py``.
"""

from __future__ import annotations

import ipaddress
import random
from typing import Any

import pytest

from apiserver.errors import APIError
from apiserver.registry.core.service import fields
from apiserver.registry.core.service.alloc import Allocators
from apiserver.registry.core.service.allocator import Bitmap
from apiserver.registry.core.service.ipallocator import IPRange, parse_service_cidrs, range_offset
from apiserver.registry.core.service.portallocator import PortRange, parse_port_range
from apiserver.registry.core.service.portallocator import range_offset as port_range_offset
from apiserver.validation import defaults


async def _nothing() -> list[Any]:
    return []


def ip_range(cidr: str) -> IPRange:
    # Family inference never touches etcd: no storage is needed for it.
    return IPRange(ipaddress.ip_network(cidr), None, "/k", _nothing)  # type: ignore[arg-type]


def allocators(*cidrs: str) -> Allocators:
    return Allocators([ip_range(c) for c in cidrs], PortRange("30000-32767", None, "/p", _nothing))  # type: ignore


# --- bitmaps -------------------------------------------------------------------------------------

def test_the_bitmap_is_stored_as_go_writes_a_big_int() -> None:
    bitmap = Bitmap(20, 4)
    for i in (0, 3, 9, 19):
        assert bitmap.allocate(i)
    assert not bitmap.allocate(3) and not bitmap.allocate(20)
    assert bitmap.to_bytes() == (1 | 1 << 3 | 1 << 9 | 1 << 19).to_bytes(3, "big")
    again = Bitmap.from_bytes(20, 4, bitmap.to_bytes())
    assert list(again) == [0, 3, 9, 19] and again.count == 4
    assert Bitmap(20).to_bytes() == b""


def test_dynamic_allocation_prefers_the_upper_band_then_fills_the_lower() -> None:
    bitmap = Bitmap(20, 4)
    rng = random.Random(7)
    taken = []
    while (i := bitmap.next_free(rng)) is not None:
        bitmap.allocate(i)
        taken.append(i)
    # The 16 upper offsets go first, then the 4 kept for static allocation.
    assert sorted(taken[:16]) == list(range(4, 20)) and sorted(taken[16:]) == [0, 1, 2, 3]
    assert bitmap.free() == 0 and bitmap.next_free(rng) is None


@pytest.mark.parametrize(("cidr", "offset"), [("10.96.0.0/12", 256), ("10.0.0.0/24", 16), ("10.0.0.0/28", 0),
                                              ("10.0.0.0/20", 256), ("10.0.0.0/22", 64)])
def test_the_static_band_of_ip_ranges(cidr: str, offset: int) -> None:
    assert range_offset(ipaddress.ip_network(cidr)) == offset


def test_the_static_band_of_port_ranges() -> None:
    assert port_range_offset(2768) == 86 and port_range_offset(10000) == 128 and port_range_offset(100) == 16
    assert port_range_offset(16) == 0


def test_ip_ranges_skip_the_network_and_broadcast_addresses() -> None:
    r = ip_range("10.96.0.0/29")
    assert r.size == 6 and r.ip_at(0) == "10.96.0.1" and r.ip_at(5) == "10.96.0.6"
    assert r.offset_of("10.96.0.0") is None and r.offset_of("10.96.0.7") is None
    assert r.offset_of("10.96.0.3") == 2 and r.offset_of("fd00::1") is None
    assert ip_range("fd00::/108").size == 65536


@pytest.mark.parametrize(("text", "error"), [
    ("10.0.0.0/8", "specified --service-cluster-ip-range is too large; for 32-bit addresses, the mask must be >= 12"),
    ("fd00::/64", "specified --service-cluster-ip-range is too large; for 128-bit addresses, the mask must be >= 108"),
    ("10.96.0.0/12,10.100.0.0/16", "--service-cluster-ip-range may hold one CIDR, or one of each IP family"),
    ("nonsense", "invalid CIDR 'nonsense'"),
])
def test_bad_service_ranges_are_refused(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error.replace("(", r"\(").replace("+", r"\+")):
        parse_service_cidrs(text)


def test_port_ranges() -> None:
    assert parse_port_range("30000-32767") == (30000, 2768)
    assert parse_port_range("30000+9") == (30000, 10)
    assert parse_port_range("30500") == (30500, 1)
    with pytest.raises(ValueError):
        parse_port_range("32767-30000")


# --- IP families ---------------------------------------------------------------------------------

def svc(**spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}], **spec}}
    defaults.default_service(obj)
    fields.normalize_cluster_ips(obj, None)
    return obj


@pytest.mark.parametrize(("cluster", "spec", "policy", "families"), [
    pytest.param(("10.96.0.0/12",), {}, "SingleStack", ["IPv4"], id="single-stack"),
    pytest.param(("fd00::/108",), {}, "SingleStack", ["IPv6"], id="single-stack-ipv6"),
    pytest.param(("10.96.0.0/12", "fd00::/108"), {}, "SingleStack", ["IPv4"], id="dual-cluster-default"),
    pytest.param(("10.96.0.0/12", "fd00::/108"), {"ipFamilyPolicy": "PreferDualStack"}, "PreferDualStack",
                 ["IPv4", "IPv6"], id="prefer-dual"),
    pytest.param(("10.96.0.0/12",), {"ipFamilyPolicy": "PreferDualStack"}, "PreferDualStack", ["IPv4"],
                 id="prefer-dual-on-single-cluster"),
    pytest.param(("10.96.0.0/12", "fd00::/108"), {"clusterIP": "fd00::5"}, "SingleStack", ["IPv6"],
                 id="family-from-ip"),
    pytest.param(("10.96.0.0/12",), {"clusterIP": "None", "selector": None}, "RequireDualStack", ["IPv4", "IPv6"],
                 id="headless-selectorless"),
    pytest.param(("10.96.0.0/12",), {"clusterIP": "None", "selector": {"app": "web"}}, "SingleStack", ["IPv4"],
                 id="headless"),
])
def test_ip_families_are_inferred(cluster: tuple[str, ...], spec: dict[str, Any], policy: str,
                                  families: list[str]) -> None:
    obj = svc(**{k: v for k, v in spec.items() if v is not None})
    allocators(*cluster).init_ip_family_fields(obj, None)
    assert (obj["spec"]["ipFamilyPolicy"], obj["spec"]["ipFamilies"]) == (policy, families)


@pytest.mark.parametrize(("spec", "message"), [
    pytest.param({"ipFamilyPolicy": "RequireDualStack"},
                 'spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for '
                 "dual-stack services", id="dual-on-single"),
    pytest.param({"ipFamilies": ["IPv6"]}, 'spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster',
                 id="unconfigured-family"),
    pytest.param({"clusterIP": "fd00::5"},
                 'spec.clusterIPs[0]: Invalid value: ["fd00::5"]: IPv6 is not configured on this cluster',
                 id="unconfigured-ip-family"),
    pytest.param({"ipFamilies": ["IPv4", "IPv6"]},
                 "spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' "
                 "when multiple IP families are specified", id="two-families-single-stack"),
])
def test_ip_families_the_cluster_cannot_serve_are_refused(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(APIError) as raised:
        allocators("10.96.0.0/12").init_ip_family_fields(svc(**spec), None)
    assert raised.value.code == 422
    assert message in raised.value.message


def test_external_name_services_get_no_families() -> None:
    obj = svc(type="ExternalName", externalName="db.example.com")
    allocators("10.96.0.0/12").init_ip_family_fields(obj, None)
    assert "ipFamilies" not in obj["spec"] and "ipFamilyPolicy" not in obj["spec"]


# --- fields kept in step ---------------------------------------------------------------------------

def stored(**spec: Any) -> dict[str, Any]:
    base = {"type": "NodePort", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack", "externalTrafficPolicy": "Cluster",
            "ports": [{"name": "http", "port": 80, "nodePort": 30080}]}
    base.update(spec)
    return {"metadata": {"name": "web"}, "spec": base, "status": {"loadBalancer": {}}}


def test_resubmitting_a_manifest_keeps_what_was_allocated() -> None:
    new: dict[str, Any] = {"metadata": {"name": "web"},
                           "spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80}]}}
    fields.patch_allocated_values(new, stored())
    fields.normalize_cluster_ips(new, stored())
    assert new["spec"]["clusterIP"] == "10.96.0.10" and new["spec"]["clusterIPs"] == ["10.96.0.10"]
    assert new["spec"]["ports"][0]["nodePort"] == 30080


def test_an_old_client_setting_only_cluster_ip_keeps_the_list_in_step() -> None:
    new = stored()
    del new["spec"]["clusterIPs"]
    fields.normalize_cluster_ips(new, stored())
    assert new["spec"]["clusterIPs"] == ["10.96.0.10"]
    changed = stored(clusterIP="10.96.0.99")
    fields.normalize_cluster_ips(changed, stored())
    # The change then reaches validation, which refuses it on spec.clusterIPs[0].
    assert changed["spec"]["clusterIPs"] == ["10.96.0.99"]


def test_a_type_change_drops_what_the_new_type_does_not_use() -> None:
    to_cluster_ip = stored(type="ClusterIP")
    fields.drop_type_dependent_fields(to_cluster_ip, stored())
    assert "nodePort" not in to_cluster_ip["spec"]["ports"][0]
    assert "externalTrafficPolicy" not in to_cluster_ip["spec"]
    assert to_cluster_ip["spec"]["clusterIP"] == "10.96.0.10"
    to_external = stored(type="ExternalName", externalName="db.example.com")
    fields.drop_type_dependent_fields(to_external, stored())
    for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        assert key not in to_external["spec"], key
    # A NodePort the client changed while switching type is left for validation to refuse.
    changed = stored(type="ClusterIP", ports=[{"name": "http", "port": 80, "nodePort": 30099}])
    fields.drop_type_dependent_fields(changed, stored())
    assert changed["spec"]["ports"][0]["nodePort"] == 30099
