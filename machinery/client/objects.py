"""How client code addresses, reads and writes the official ``kubernetes.client`` models.

- :class:`TypedResource` is what every client call takes: the resource table's
  ``ResourceInfo`` satisfies it, and once ``ResourceInfo`` is generic in its
  model (``ResourceInfo[V1Pod]``) the client's return types follow without a
  change here.
- :func:`decode` turns wire JSON into a model. The models forbid unknown
  fields; a server newer than the models may send some, so unknown fields are
  dropped (and logged once per model and path) instead of failing the whole
  list or watch.
- :func:`to_wire` is the inverse, for request bodies.

Pure functions; the only state is the set of unknown-field paths already
logged, which only grows and is touched from the event loop's thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from kubernetes.client import V1ObjectMeta
from pydantic import BaseModel, ValidationError

from machinery.api.kinds import ObjectKey, object_key
from machinery.client.errors import UnexpectedResponse

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)
M_co = TypeVar("M_co", bound=BaseModel, covariant=True)


class TypedResource(Protocol[M_co]):
    """The part of ``machinery.api.kinds.ResourceInfo`` the client needs."""

    @property
    def model(self) -> type[M_co]: ...

    @property
    def namespaced(self) -> bool: ...

    @property
    def kind(self) -> str: ...

    @property
    def plural(self) -> str: ...

    @property
    def api_version(self) -> str: ...

    @property
    def group_resource(self) -> str: ...

    def path(self, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str: ...


@dataclass(frozen=True, slots=True)
class ObjectList(Generic[M]):
    """A list's items and the resourceVersion the list was read at (where a watch resumes)."""

    items: list[M]
    resource_version: str


def meta_of(obj: BaseModel) -> V1ObjectMeta:
    """``metadata`` of any API object; an object without one is a bug in the caller."""
    meta: V1ObjectMeta | None = getattr(obj, "metadata", None)
    if meta is None:
        raise ValueError(f"{type(obj).__name__} has no metadata")
    return meta


def key_of(obj: BaseModel) -> ObjectKey:
    """client-go's ``MetaNamespaceKeyFunc``: ``namespace/name``, or ``name`` when cluster-scoped."""
    meta = meta_of(obj)
    return object_key(meta.namespace, meta.name or "")


def resource_version_of(obj: BaseModel) -> str:
    return meta_of(obj).resource_version or ""


def to_wire(obj: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    """The JSON-ready dict of a model (camelCase, no nulls) or a copy of a dict."""
    if isinstance(obj, BaseModel):
        return obj.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dict(obj)


_reported_unknown: set[tuple[str, str]] = set()


#: What an informer may do to each object's JSON before it is decoded (client-go's ``TransformFunc``, applied
#: before decoding here, which also spares decoding what it drops). It changes the dict in place.
Transform = Callable[[dict[str, Any]], None]


def strip_managed_fields(obj: dict[str, Any]) -> None:
    """client-go's ``TransformStripManagedFields``: kube-scheduler's Pod informer and kube-controller-manager's
    informers drop ``metadata.managedFields``, which nothing of theirs reads, to save memory."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)


def decode(model: type[M], data: Any, transform: Transform | None = None) -> M:
    """Validate wire JSON (already parsed) into ``model``, dropping fields the model does not know.

    ``data`` is owned by the caller and may be modified in place (``transform`` first, when given).
    """
    if transform is not None and isinstance(data, dict):
        transform(data)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        errors = err.errors()
        if not errors or any(e["type"] != "extra_forbidden" for e in errors):
            raise UnexpectedResponse(f"cannot decode {model.__name__}: {err}") from None
        for e in errors:
            _drop(data, e["loc"])
            pattern = ".".join("*" if isinstance(p, int) else str(p) for p in e["loc"])
            if (model.__name__, pattern) not in _reported_unknown:
                _reported_unknown.add((model.__name__, pattern))
                log.warning("dropping field %s unknown to %s (the server is newer than the models)",
                            pattern, model.__name__)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise UnexpectedResponse(f"cannot decode {model.__name__}: {err}") from None


def _drop(data: Any, loc: tuple[int | str, ...]) -> None:
    node = data
    for part in loc[:-1]:
        node = node[part]
    del node[loc[-1]]
