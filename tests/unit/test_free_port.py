"""``procs.free_port``: ports for servers that have not bound them yet."""

from __future__ import annotations

import itertools
import os
import socket

import pytest

from kubesim import procs


def test_a_port_is_not_handed_out_twice_before_its_server_binds_it() -> None:
    # Among 500 random picks from about 12,000 ports, a repeat is all but certain (birthday bound):
    # two servers started one after the other (etcd's client and peer ports) would then collide.
    ports = [procs.free_port() for _ in range(500)]
    assert len(set(ports)) == len(ports)


def test_the_port_handed_out_is_free() -> None:
    port = procs.free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((procs.LOOPBACK, port))


def test_ports_come_from_the_range_the_environment_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(procs.PORT_RANGE_ENV, "23000-23499")
    ports = [procs.free_port() for _ in range(200)]
    assert all(23000 <= port <= 23499 for port in ports)


def test_a_malformed_range_falls_back_to_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(procs.PORT_RANGE_ENV, "high-low")
    assert procs.port_range()[0] == 20000


def test_the_workers_slices_do_not_overlap() -> None:
    slices = [procs.worker_port_range(i, 4) for i in range(4)]
    for (_, high), (low, _) in itertools.pairwise(slices):
        assert high < low
    assert all(high - low >= 1000 for low, high in slices)


def test_a_test_worker_chooses_from_its_own_slice() -> None:
    # make test runs the suite on pytest-xdist workers: tests/conftest.py gives each its slice.
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        pytest.skip("not on a pytest-xdist worker")
    expected = procs.worker_port_range(int(worker[2:]), int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    assert procs.port_range() == expected
    assert expected[0] <= procs.free_port() <= expected[1]
