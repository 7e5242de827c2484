"""networking.k8s.io/v1 Ingresses: validation of rules, paths and backends, a status, and the printer.

As ``pkg/registry/networking/ingress/strategy.go``: a spec change bumps the
generation; the ingress controller writes ``status.loadBalancer`` through
``/status``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import networking as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class IngressStrategy(Strategy):
    has_generation = True

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"loadBalancer": {}}

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_ingress(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_ingress_update(new, old)


class IngressStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_ingress_status_update(new, old)


_STRATEGY: Final = IngressStrategy()

COLUMNS: Final = (
    printers.NAME,
    Column("Class", "string", "The name of the IngressClass resource that should be used"),
    Column("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
    Column("Address", "string", "Address is a list containing ingress points for the load-balancer"),
    Column("Ports", "string", "Ports of TLS configurations that open"),
    printers.AGE,
)


def format_hosts(rules: list[Obj]) -> str:
    """``formatHosts``: up to three hosts, ``*`` when no rule names one."""
    hosts = [str(r["host"]) for r in rules if r.get("host")]
    shown = hosts[:3]
    if not shown:
        return "*"
    text = ",".join(shown)
    return f"{text} + {len(rules) - 3} more..." if len(hosts) > 3 else text


def _address(ingress: Obj) -> str:
    entries = (((ingress.get("status") or {}).get("loadBalancer") or {}).get("ingress")) or []
    return ",".join(str(e.get("ip") or e.get("hostname") or "") for e in entries if e.get("ip") or e.get("hostname"))


def _row(ingress: Obj, now: datetime) -> Row:
    metadata: Obj = ingress.get("metadata") or {}
    spec: Obj = ingress.get("spec") or {}
    return Row([metadata.get("name", ""), spec.get("ingressClassName") or "<none>",
                format_hosts(list(spec.get("rules") or [])), _address(ingress),
                "80, 443" if spec.get("tls") else "80", since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.builtin("networking.k8s.io", "v1", "ingresses"),
    strategy=_STRATEGY,
    subresources={"status": StatusREST(IngressStatusStrategy(_STRATEGY))},
    printer=PRINTER,
)
