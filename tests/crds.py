"""CustomResourceDefinitions for tests: a Widget kind with most of what schemas can say, and helpers."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import httpx

from tests import harness

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A Widget is a test kind.",
    "properties": {
        "spec": {
            "type": "object",
            "description": "What the widget should be.",
            "required": ["color"],
            "properties": {
                "color": {"type": "string", "enum": ["red", "green", "blue"], "description": "The widget's color."},
                "size": {"type": "integer", "minimum": 1, "maximum": 100, "default": 3,
                         "description": "How big, from 1 to 100."},
                "replicas": {"type": "integer", "minimum": 0},
                "name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 10},
                "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                "when": {"type": "string", "format": "date-time"},
                "port": {"x-kubernetes-int-or-string": True},
                "note": {"type": "string", "nullable": True},
                "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set",
                         "maxItems": 4},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                          "minItems": 1,
                          "items": {"type": "object", "required": ["name"],
                                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"},
                           "x-kubernetes-map-type": "granular"},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "x-kubernetes-preserve-unknown-fields": True},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "maxSize": {"type": "integer"},
                "immutable": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "immutable is immutable"}]},
            },
            "x-kubernetes-validations": [
                {"rule": "!has(self.maxSize) || self.size <= self.maxSize",
                 "messageExpression": "'size ' + string(self.size) + ' is over maxSize'"},
            ],
        },
        "status": {"type": "object", "properties": {
            "replicas": {"type": "integer"}, "phase": {"type": "string"},
            "selector": {"type": "string"}}},
    },
}


def widget_crd(group: str, *, plural: str = "widgets", kind: str = "Widget", scope: str = "Namespaced",
               versions: list[dict[str, Any]] | None = None, short_names: tuple[str, ...] = ("wd",)) -> dict[str, Any]:
    """A CRD of ``kind`` in ``group``; by default one version v1 with status, scale and printer columns."""
    if versions is None:
        versions = [widget_version("v1")]
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": scope,
                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                           "shortNames": list(short_names), "categories": ["all", "tests"]},
                 "versions": versions},
    }


def widget_version(name: str, *, storage: bool = True, served: bool = True,
                   schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": name, "served": served, "storage": storage,
        "schema": {"openAPIV3Schema": copy.deepcopy(schema or WIDGET_SCHEMA)},
        "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                  "statusReplicasPath": ".status.replicas",
                                                  "labelSelectorPath": ".status.selector"}},
        "additionalPrinterColumns": [
            {"name": "Color", "type": "string", "jsonPath": ".spec.color", "description": "The color."},
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "priority": 1},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ],
        "selectableFields": [{"jsonPath": ".spec.color"}],
    }


def unique_group() -> str:
    return f"g{uuid.uuid4().hex[:8]}.example.com"


def widget(obj_name: str, group: str, version: str = "v1", /, kind: str = "Widget", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{group}/{version}", "kind": kind, "metadata": {"name": obj_name},
            "spec": {"color": "red", **spec}}


def established(crd: dict[str, Any]) -> bool:
    return any(c["type"] == "Established" and c["status"] == "True"
               for c in (crd.get("status") or {}).get("conditions") or ())


def create_crd(api: httpx.Client, crd: dict[str, Any], *, timeout: float = 15.0) -> dict[str, Any]:
    """Create a CRD and wait until it is Established and its first version's collection answers."""
    r = api.post(CRDS, json=crd)
    assert r.status_code == 201, r.text
    name = crd["metadata"]["name"]
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v["served"])
    plural = spec["names"]["plural"]

    def ready() -> dict[str, Any] | None:
        got = api.get(f"{CRDS}/{name}").json()
        if not established(got):
            return None
        return got if api.get(f"/apis/{spec['group']}/{version}/{plural}").status_code == 200 else None
    result = harness.wait_for(ready, timeout=timeout, message=f"{name} established and served")
    assert isinstance(result, dict)
    return result


def delete_crd(api: httpx.Client, name: str, *, timeout: float = 30.0) -> None:
    api.delete(f"{CRDS}/{name}")
    harness.wait_for(lambda: api.get(f"{CRDS}/{name}").status_code == 404, timeout=timeout,
                     message=f"{name} deleted")
