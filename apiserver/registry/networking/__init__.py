"""networking.k8s.io: Ingresses, IngressClasses, NetworkPolicies."""

from __future__ import annotations

from apiserver.registry.networking import ingressclasses, ingresses, networkpolicies

RESOURCES = [ingressclasses.RESOURCE, ingresses.RESOURCE, networkpolicies.RESOURCE]
