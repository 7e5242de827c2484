"""``procs.free_port``: ports for servers that have not bound them yet."""

from __future__ import annotations

import socket

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
