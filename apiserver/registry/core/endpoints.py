"""core/v1 Endpoints: the addresses behind a Service, as the endpoints controller (or a user) writes them.

Each subset needs addresses, each address a routable IP (not loopback,
link-local or unspecified: ``ValidateNonSpecialIP``), and its ports names when
there are several. Ports default to TCP. The Table lists up to three
``ip:port`` pairs and how many more there are, as ``kubectl get ep`` shows.
"""

from __future__ import annotations

import ipaddress
from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import core as validation
from apiserver.validation import defaults
from apiserver.validation.field import FieldError
from machinery.api import kinds


class EndpointsStrategy(Strategy):
    """The create and update rules of Endpoints."""

    def default(self, obj: Obj) -> None:
        defaults.default_endpoints(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_endpoints(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_endpoints_update(new, old)


_STRATEGY: Final = EndpointsStrategy()

COLUMNS: Final = (
    printers.NAME,
    Column("Endpoints", "string", ("io.k8s.api.core.v1.Endpoints", "subsets")),
    printers.AGE,
)
_SHOWN: Final = 3


def _join_host_port(ip: str, port: int) -> str:
    """Go's ``net.JoinHostPort``: IPv6 addresses in brackets."""
    try:
        is_v6 = ipaddress.ip_address(ip).version == 6
    except ValueError:
        is_v6 = ":" in ip
    return f"[{ip}]:{port}" if is_v6 else f"{ip}:{port}"


def format_endpoints(endpoints: Obj) -> str:
    """``formatEndpoints``: ``10.0.0.1:80,10.0.0.2:80 + 3 more...``, ``<none>`` without subsets."""
    subsets = endpoints.get("subsets") or []
    if not subsets:
        return "<none>"
    shown: list[str] = []
    count = 0
    more = False
    for subset in subsets:
        addresses = [a.get("ip", "") for a in subset.get("addresses") or []]
        ports = subset.get("ports") or []
        # A headless Service's endpoints may have no ports: the addresses alone are listed.
        groups = [[_join_host_port(ip, int(port.get("port") or 0)) for ip in addresses] for port in ports] \
            if ports else [addresses]
        for group in groups:
            count += len(group)
            for item in group:
                if len(shown) == _SHOWN:
                    more = True
                    break
                shown.append(item)
    text = ",".join(shown)
    return f"{text} + {count - _SHOWN} more..." if more else text


def _row(endpoints: Obj, now: datetime) -> Row:
    metadata: Obj = endpoints.get("metadata") or {}
    return Row([metadata.get("name", ""), format_endpoints(endpoints), since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.ENDPOINTS,
    strategy=_STRATEGY,
    printer=PRINTER,
)
