"""What MutatingWebhookConfigurations and ValidatingWebhookConfigurations share: one strategy, one printer.

The two kinds are one shape (a list of webhooks) and Kubernetes validates them
with the same functions, told whether the webhooks mutate (only mutating ones
have ``reinvocationPolicy``). :class:`WebhookConfigurationStrategy` is that
strategy with the flag, and :data:`PRINTER` the columns kubectl shows for
both; each kind's module registers them with its own ResourceInfo.

Stateless; shared by every request.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import admissionregistration as validation
from apiserver.validation.field import FieldError


class WebhookConfigurationStrategy(Strategy):
    """Defaulted and validated as Kubernetes does; a change of the webhooks bumps the generation."""

    has_generation = True

    def __init__(self, *, mutating: bool) -> None:
        super().__init__()
        self.mutating = mutating

    def default(self, obj: Obj) -> None:
        validation.default_webhook_configuration(obj, mutating=self.mutating)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def spec_changed(self, new: Obj, old: Obj) -> bool:
        # The kinds have no spec: their webhooks are what the generation counts.
        return bool(new.get("webhooks") != old.get("webhooks"))

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_webhook_configuration(obj, mutating=self.mutating)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_webhook_configuration_update(new, old, mutating=self.mutating)


COLUMNS: Final = (
    printers.NAME,
    Column("Webhooks", "integer", "Webhooks indicates the number of webhooks included in this configuration"),
    printers.AGE,
)


def _row(configuration: Obj, now: datetime) -> Row:
    metadata: Obj = configuration.get("metadata") or {}
    return Row([metadata.get("name", ""), len(configuration.get("webhooks") or []),
                since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)
