"""The gRPC target of one or several etcd endpoints: several fail over only as an ``ipv4:`` address list."""

from __future__ import annotations

from apiserver.storage.etcd import grpc_target


def test_one_endpoint_is_its_host_and_port() -> None:
    assert grpc_target(["http://etcd:2379"]) == "etcd:2379"
    assert grpc_target(["127.0.0.1:2380"]) == "127.0.0.1:2380"


def test_several_endpoints_are_an_address_list_with_names_resolved() -> None:
    assert grpc_target(["http://127.0.0.1:2379", "http://127.0.0.2:2381"]) == "ipv4:127.0.0.1:2379,127.0.0.2:2381"
    assert grpc_target(["http://localhost:2379", "http://127.0.0.1:2381"]) == "ipv4:127.0.0.1:2379,127.0.0.1:2381"


def test_a_name_that_does_not_resolve_leaves_the_first_endpoint() -> None:
    assert grpc_target(["http://no-such-host.invalid:2379", "http://127.0.0.1:2381"]) == \
        "no-such-host.invalid:2379"
