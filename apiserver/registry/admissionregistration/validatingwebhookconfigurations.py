"""admissionregistration.k8s.io/v1 ValidatingWebhookConfigurations: defaulted and validated as Kubernetes does, and printed.

Stored for the clients and operators that manage them: kubesim does not call admission webhooks.
A change of ``webhooks`` bumps the generation. The strategy and printer are those of every webhook
configuration (:mod:`.webhookconfiguration`), told that these webhooks
only validate (no ``reinvocationPolicy``).
"""

from __future__ import annotations

from typing import Final

from apiserver.registry.admissionregistration import webhookconfiguration
from apiserver.registry.resource import Resource
from machinery.api import kinds

RESOURCE: Final = Resource(info=kinds.builtin("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"),
                           strategy=webhookconfiguration.WebhookConfigurationStrategy(mutating=False),
                           printer=webhookconfiguration.PRINTER)
