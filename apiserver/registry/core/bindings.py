"""core/v1 ``bindings``: the older form of ``pods/binding``, a Binding POSTed to the namespace."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from starlette.responses import Response

from apiserver.registry.core import pods
from apiserver.registry.resource import Resource
from machinery.api import kinds

if TYPE_CHECKING:
    from apiserver.endpoints.request import Call


class BindingsREST:
    """Create only: the Binding's own name says which Pod it binds."""

    async def create(self, call: Call) -> Response:
        return await pods.create_binding(call, None)


RESOURCE: Final = Resource(info=kinds.builtin("", "v1", "bindings"), rest=BindingsREST())
