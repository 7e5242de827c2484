"""events.k8s.io: Events in the newer shape, stored as core Events."""

from __future__ import annotations

from apiserver.registry.events import events

RESOURCES = [events.RESOURCE]
