"""DefaultBinder: bind through ``pods/binding``, carrying the explanation annotations in the same write.

The APIServer copies the Binding's ``metadata.annotations`` onto the Pod and
sets ``PodScheduled=True`` in the write that sets ``spec.nodeName``, as
kube-apiserver does, so explaining the decision costs no extra write. The
Binding names the Pod's uid: a Pod deleted and re-created under the same
name meanwhile is not bound by mistake.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import httpx

from machinery.client import ApiError
from scheduler.framework.interface import SUCCESS, CycleState, Handle, Status
from scheduler.framework.types import PodInfo
from scheduler.plugins import names
from scheduler.plugins.helper import plugin_args

NAME: Final = names.DEFAULT_BINDER


class DefaultBinder:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str, annotations: Mapping[str, str]) -> Status:
        try:
            await self._handle.client.bind(pod.namespace, pod.name, node_name, uid=pod.uid, annotations=annotations)
        except (ApiError, httpx.TransportError) as err:
            return Status.from_error(err, plugin=NAME)
        return SUCCESS


def new(args: Mapping[str, Any] | None, handle: Handle) -> DefaultBinder:
    plugin_args(args, (), NAME)
    return DefaultBinder(handle)
