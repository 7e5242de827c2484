"""What an established CustomResourceDefinition is served as: one Resource per served version.

kube-apiextensions-apiserver builds, per CRD, a generic store whose strategy
comes from the schema instead of a Go type. Here each served version of a CRD
becomes a :class:`~apiserver.registry.resource.Resource`, and so does the
storage version when it is not served (``served=False``: its store holds the
objects, but no client reaches it, as Kubernetes answers 404 for it):

- its :class:`~machinery.api.kinds.ResourceInfo` from the CRD's accepted
  names and scope, with the status and scale subresources the version
  declares, the :class:`~machinery.api.unstructured.Unstructured` model, etcd
  keys under ``/registry/<group>/<plural>/`` as Kubernetes keys them, and the
  definition name Kubernetes publishes (``com.example.v1.Widget``);
- for the storage version, a :class:`CustomResourceStrategy` (defaulting,
  schema validation, CEL rules, generation and status handling as Kubernetes'
  custom resource strategy has them, creates refused while the CRD is
  terminating); the other versions are stored in its keys (``storage_of``)
  through a :class:`VersionConverter` (conversion strategy ``None`` rewrites
  ``apiVersion``; ``Webhook`` answers a clear error, kubesim calls no
  conversion webhooks);
- its printer from ``additionalPrinterColumns`` (or Age), its status and
  scale subresources, its selectable fields, and no strategic merge patch
  (415, as for every custom resource).

:func:`definitions` gives the schemas published in OpenAPI (and read by the
body walker, patches and field ownership) for the same versions.

Everything built here is immutable and rebuilt when the CRD changes.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import orjson

from apiserver import errors, printers
from apiserver.apiextensions import jsonpath
from apiserver.apiextensions.defaulting import Defaulter, compile_defaulter, has_defaults
from apiserver.apiextensions.validation import SchemaValidator
from apiserver.codec import PATCH_TYPES
from apiserver.registry.generic import ScaleREST, StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import FinishFunc, Obj, StatusStrategy, Strategy
from apiserver.validation.field import FieldError
from apiserver.validation.meta import validate_object_meta, validate_object_meta_update
from machinery.api.kinds import STANDARD_VERBS, ResourceInfo, Subresource
from machinery.api.unstructured import Unstructured

if TYPE_CHECKING:
    from apiserver.registry.store import StoreContext

_OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_LIST_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
#: Patch types a custom resource takes: every one but strategic merge patch (which needs Go types).
CUSTOM_PATCH_TYPES: Final = tuple(t for t in PATCH_TYPES if t != "application/strategic-merge-patch+json")


def definition_name(group: str, version: str, kind: str) -> str:
    """The OpenAPI name Kubernetes gives a custom kind: the group reversed, the version, the kind."""
    return ".".join([*reversed(group.split(".")), version, kind])


@dataclass(frozen=True, slots=True)
class Names:
    plural: str
    singular: str
    kind: str
    list_kind: str
    short_names: tuple[str, ...]
    categories: tuple[str, ...]


def accepted_names(crd: Obj) -> Names:
    names = ((crd.get("status") or {}).get("acceptedNames") or {}) or (crd.get("spec") or {}).get("names") or {}
    kind = names.get("kind") or ""
    return Names(plural=names.get("plural") or "", singular=names.get("singular") or kind.lower(), kind=kind,
                 list_kind=names.get("listKind") or f"{kind}List",
                 short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()))


def _versions(crd: Obj) -> list[Obj]:
    return [v for v in (crd.get("spec") or {}).get("versions") or [] if isinstance(v, dict)]


def storage_version(crd: Obj) -> Obj:
    return next(v for v in _versions(crd) if v.get("storage"))


def info_for(crd: Obj, version: Obj) -> ResourceInfo[Unstructured]:
    spec = crd.get("spec") or {}
    group = spec["group"]
    names = accepted_names(crd)
    subresources = []
    declared = version.get("subresources") or {}
    if isinstance(declared.get("scale"), dict):
        subresources.append(Subresource("scale", "Scale", ("get", "patch", "update"), "autoscaling", "v1"))
    if "status" in declared:
        subresources.append(Subresource("status", names.kind, ("get", "patch", "update")))
    return ResourceInfo(
        group=group, version=version["name"], plural=names.plural, singular=names.singular, kind=names.kind,
        namespaced=spec.get("scope") == "Namespaced", model_ref=Unstructured, etcd_resource=f"{group}/{names.plural}",
        definition=definition_name(group, version["name"], names.kind), short_names=names.short_names,
        verbs=STANDARD_VERBS, subresources=tuple(subresources), categories=names.categories)


def _schema(version: Obj) -> Obj:
    schema = (version.get("schema") or {}).get("openAPIV3Schema")
    return schema if isinstance(schema, dict) else {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


# --- the strategy --------------------------------------------------------------------------------

class CustomResourceStrategy(Strategy):
    """The create and update rules of one custom kind, from its storage version's schema."""

    has_generation = True

    def __init__(self, info: ResourceInfo[Any], version: Obj, *, terminating: bool) -> None:
        schema = _schema(version)
        self.validator = SchemaValidator(schema)
        self.defaulter: Defaulter | None = compile_defaulter(schema)
        self.terminating = terminating
        self.group_kind = info.group_kind
        self.fields_paths = tuple(f["jsonPath"] for f in version.get("selectableFields") or ()
                                  if isinstance(f, dict) and f.get("jsonPath"))
        super().__init__(info)

    def supports_field(self, path: str) -> bool:
        # The CRD's selectable fields, named without their leading dot ("spec.color" for ".spec.color").
        return super().supports_field(path) or any(path == p.lstrip(".") for p in self.fields_paths)

    def fields(self, obj: Obj) -> dict[str, str]:
        meta = obj.get("metadata") or {}
        out = {"metadata.name": meta.get("name") or ""}
        if self.namespaced:
            out["metadata.namespace"] = meta.get("namespace") or ""
        for path in self.fields_paths:
            found = jsonpath.find(obj, path)
            value = found[0] if found else None
            out[path.lstrip(".")] = "" if value is None else (
                ("true" if value else "false") if isinstance(value, bool) else str(value))
        return out

    def prepare_for_create(self, obj: Obj) -> None:
        if self.has_status:
            obj.pop("status", None)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        if self.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        # Any change but metadata (and status, when /status owns it) is a new generation.
        skip = ("metadata", "status") if self.has_status else ("metadata",)
        if {k: v for k, v in new.items() if k not in skip} != {k: v for k, v in old.items() if k not in skip}:
            new.setdefault("metadata", {})["generation"] = int((old.get("metadata") or {}).get("generation")
                                                               or 1) + 1

    def default(self, obj: Obj) -> None:
        if self.defaulter is not None:
            self.defaulter(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        errs = validate_object_meta(obj.get("metadata") or {}, namespaced=self.namespaced)
        return errs + self.validator.validate(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
        return errs + self.validator.validate(new, old)

    async def begin_create(self, ctx: StoreContext, obj: Obj, *, dry_run: bool) -> FinishFunc:
        if self.terminating:
            raise errors.APIError(405, "MethodNotAllowed",
                                  "create not allowed while custom resource definition is terminating")
        return await super().begin_create(ctx, obj, dry_run=dry_run)


class CustomResourceStatusStrategy(StatusStrategy):
    """``/status`` of a custom kind: only status (and metadata) change; the whole object is validated."""

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return self.main.validate_update(new, old)


# --- versions ------------------------------------------------------------------------------------

class VersionConverter:
    """Conversion strategy None between a served version and the storage version: apiVersion rewritten.

    Objects read in the served version get its schema's defaults (Kubernetes
    defaults on read). Strategy Webhook answers 500 naming what is missing.
    """

    def __init__(self, served_api_version: str, storage_api_version: str, defaulter: Defaulter | None, *,
                 webhook: bool = False, kind: str = "") -> None:
        self.kind = kind
        self.served = served_api_version
        self.storage = storage_api_version
        self.defaulter = defaulter
        self.webhook = webhook

    def _check(self) -> None:
        if self.webhook and self.served != self.storage:
            raise errors.internal_error(
                f"conversion webhook for {self.storage}, Kind={self.kind} failed: kubesim does not call conversion "
                "webhooks; serve this version with conversion strategy None or use the storage version "
                f"{self.storage}")

    def to_storage(self, obj: Obj) -> Obj:
        self._check()
        obj["apiVersion"] = self.storage
        return obj

    def from_storage(self, obj: Obj) -> Obj:
        self._check()
        obj["apiVersion"] = self.served
        if self.defaulter is not None:
            self.defaulter(obj)
        return obj


# --- printing --------------------------------------------------------------------------------------

def _printer(version: Obj) -> printers.Printer:
    specs = [c for c in version.get("additionalPrinterColumns") or () if isinstance(c, dict)]
    if not specs:
        specs = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    columns = [printers.NAME]
    for c in specs:
        description = c.get("description") or f"Custom resource definition column (in JSONPath format): " \
                                               f"{c['jsonPath']}"
        columns.append(printers.Column(c["name"], c["type"], description, int(c.get("priority") or 0),
                                       c.get("format") or ""))
    paths = [(c["jsonPath"], c["type"]) for c in specs]

    def row(obj: Obj, now: datetime) -> printers.Row:
        cells: list[printers.Cell] = [printers.name(obj)]
        for path, kind in paths:
            try:
                found = jsonpath.find(obj, path)
            except jsonpath.JSONPathError:
                found = []
            if not found or found[0] is None:
                cells.append(None)
                continue
            value = found[0] if len(found) == 1 else found
            if kind == "date" and isinstance(value, str):
                cells.append(printers.since(value, now))
            elif isinstance(value, (dict, list)) or kind == "string" and not isinstance(value, str):
                cells.append(orjson.dumps(value).decode())
            else:
                cells.append(value)
        return printers.Row(cells)
    return printers.Printer(tuple(columns), row)


# --- building the Resources ----------------------------------------------------------------------

def resources_for(crd: Obj) -> list[Resource]:
    """The Resources of every served version of an established CRD, and of its storage version (first).

    The storage version is registered even when it is not served (then ``served=False``): the
    other versions are stored in its keys.
    """
    meta = crd.get("metadata") or {}
    terminating = bool(meta.get("deletionTimestamp"))
    storage = storage_version(crd)
    storage_info = info_for(crd, storage)
    strategy = CustomResourceStrategy(storage_info, storage, terminating=terminating)
    webhook = ((crd.get("spec") or {}).get("conversion") or {}).get("strategy") == "Webhook"
    out: list[Resource] = []
    for version in sorted(_versions(crd), key=lambda v: not v.get("storage")):
        # A storage version that is not served is still registered, unserved: its store holds the objects.
        served = bool(version.get("served"))
        if not served and not version.get("storage"):
            continue
        info = storage_info if version is storage else info_for(crd, version)
        schema = _schema(version)
        defaulter = compile_defaulter(schema) if has_defaults(schema) else None
        subresources: dict[str, Any] = {}
        declared = version.get("subresources") or {}
        if "status" in declared:
            subresources["status"] = StatusREST(CustomResourceStatusStrategy(strategy))
        scale = declared.get("scale")
        if isinstance(scale, dict):
            selector = scale.get("labelSelectorPath")
            subresources["scale"] = ScaleREST(
                replicas=scale["specReplicasPath"].lstrip("."), status_replicas=scale["statusReplicasPath"].lstrip("."),
                selector=selector.lstrip(".") if selector else None)
        is_storage = version is storage
        converter = None
        # The storage version converts too when objects may have been stored in another version
        # (the storage version changed since) or when its defaults apply on read.
        if not is_storage or defaulter is not None or len(_versions(crd)) > 1:
            converter = VersionConverter(info.api_version, storage_info.api_version, defaulter, webhook=webhook,
                                         kind=info.kind)
        out.append(Resource(
            info=info, strategy=strategy if is_storage else None, subresources=subresources,
            printer=_printer(version), storage_of=None if is_storage else storage_info, converter=converter,
            patch_types=CUSTOM_PATCH_TYPES, served=served))
    return out


def definitions(crd: Obj) -> dict[str, Obj]:
    """The OpenAPI definitions of every version of a CRD (kind and list), as Kubernetes publishes them."""
    spec = crd.get("spec") or {}
    group = spec.get("group") or ""
    names = accepted_names(crd)
    out: dict[str, Obj] = {}
    for version in _versions(crd):
        name = definition_name(group, version["name"], names.kind)
        schema = dict(_schema(version))
        props = dict(schema.get("properties") or {})
        props["apiVersion"] = {"type": "string", "description": (
            "APIVersion defines the versioned schema of this representation of an object. Servers should convert "
            "recognized schemas to the latest internal value, and may reject unrecognized values. More info: "
            "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources")}
        props["kind"] = {"type": "string", "description": (
            "Kind is a string value representing the REST resource this object represents. Servers may infer "
            "this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
            "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")}
        props["metadata"] = {"$ref": f"#/$defs/{_OBJECT_META}", "description": (
            "Standard object's metadata. More info: "
            "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")}
        schema["properties"] = props
        schema["x-kubernetes-group-version-kind"] = [{"group": group, "kind": names.kind,
                                                      "version": version["name"]}]
        out[name] = schema
        out[name + "List"] = {
            "description": f"{names.kind}List is a list of {names.kind}",
            "type": "object", "required": ["items"],
            "properties": {
                "apiVersion": props["apiVersion"], "kind": props["kind"],
                "items": {"type": "array", "items": {"$ref": f"#/$defs/{name}"},
                          "description": f"List of {names.plural}. More info: "
                                         "https://git.k8s.io/community/contributors/devel/api-conventions.md"},
                "metadata": {"$ref": f"#/$defs/{_LIST_META}"},
            },
            "x-kubernetes-group-version-kind": [{"group": group, "kind": names.list_kind,
                                                 "version": version["name"]}],
        }
    return out


def fingerprint(crd: Obj) -> str:
    """What the served Resources depend on: a change of it means serving the CRD anew."""
    spec = crd.get("spec") or {}
    relevant = {"spec": spec, "names": (crd.get("status") or {}).get("acceptedNames"),
                "terminating": bool((crd.get("metadata") or {}).get("deletionTimestamp"))}
    digest = hashlib.sha256(orjson.dumps(relevant, option=orjson.OPT_SORT_KEYS)).digest()
    return base64.b64encode(digest[:12]).decode()
