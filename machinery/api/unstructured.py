"""Objects of kinds without an official model: custom resources, and any kind a newer server adds.

client-go reads such objects as ``unstructured.Unstructured`` (a map) or as
metadata only. kubesim's informers and typed client need a model; this one
keeps every field it is given (``extra="allow"``) and types only what every
object has, so ``meta_of`` and the informer's keys work on it and
``to_wire`` gives back the object as it came.

Immutable by convention, like the official models the informers hold.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kubernetes.client import V1ObjectMeta
from pydantic import BaseModel, ConfigDict, Field

from machinery.api.kinds import ResourceInfo


class Unstructured(BaseModel):
    """Any API object: ``apiVersion``, ``kind`` and ``metadata`` typed, every other field kept as given."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    api_version: str | None = Field(default=None, alias="apiVersion")
    kind: str | None = None
    metadata: V1ObjectMeta | None = None


class PartialObjectMetadata(BaseModel):
    """An object's ``apiVersion``, ``kind`` and ``metadata`` only: the rest is dropped as it is read.

    What a metadata-only informer holds (client-go's ``metadatainformer``):
    the garbage collector and the namespace controller need nothing else, and
    it decodes objects of any kind, whatever their body.
    """

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    api_version: str | None = Field(default=None, alias="apiVersion")
    kind: str | None = None
    metadata: V1ObjectMeta | None = None


def metadata_only(resource: ResourceInfo[Any]) -> ResourceInfo[PartialObjectMetadata]:
    """The same resource, read as :class:`PartialObjectMetadata`."""
    return dataclasses.replace(resource, model_ref=PartialObjectMetadata)
