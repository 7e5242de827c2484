"""``pods/NAME/ephemeralcontainers``: adding debug containers to a running Pod (``kubectl debug``).

The subresource reads and writes the whole Pod (kind ``Pod``, ``v1``), as
kube-apiserver's ``EphemeralContainersREST`` does; its strategy
(``podEphemeralContainersStrategy``) keeps everything of the stored Pod but
``spec.ephemeralContainers``:

- the spec is the stored one with the new list of ephemeral containers, the
  status is the stored one, and the metadata a client could change
  (labels, annotations, finalizers, owner references, generation,
  deletionTimestamp) is reset to the stored values
  (``dropNonEphemeralContainerUpdates`` and ``ResetObjectMetaForStatus``);
- the new containers get the defaults every container gets (pull policy,
  termination message path and policy, ports' protocol...);
- validation is ``ValidatePodEphemeralContainersUpdate``
  (:func:`apiserver.validation.pod.validate_pod_ephemeral_containers_update`):
  the Pod must stay valid, existing ephemeral containers may be neither
  removed nor changed, and static Pods take none.

A PUT never creates the Pod, and GET is the Pod, which a PATCH (what kubectl
sends: a strategic merge patch of ``spec.ephemeralContainers``) needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import orjson
from starlette.responses import Response

from apiserver.endpoints import handlers
from apiserver.registry.resource import Subresource
from apiserver.registry.strategy import Obj, StatusStrategy
from apiserver.validation import defaults
from apiserver.validation import pod as validation
from apiserver.validation.field import FieldError

if TYPE_CHECKING:
    from apiserver.endpoints.request import Call

#: What ``ResetObjectMetaForStatus`` takes back from the stored object.
_RESET_METADATA: Final = ("labels", "annotations", "finalizers", "ownerReferences", "generation",
                          "deletionTimestamp", "deletionGracePeriodSeconds")


class EphemeralContainersStrategy(StatusStrategy):
    """What ``pods/ephemeralcontainers`` may change: ``spec.ephemeralContainers``, nothing else."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        spec_in = new.get("spec")
        wanted = spec_in.get("ephemeralContainers") if isinstance(spec_in, dict) else None
        meta_in = new.get("metadata")
        meta: Obj = dict(meta_in) if isinstance(meta_in, dict) else {}
        kept: Obj = orjson.loads(orjson.dumps(old))
        old_meta = kept.get("metadata") or {}
        for key in _RESET_METADATA:
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        new.clear()
        new.update(kept)
        new["metadata"] = meta
        spec = new.setdefault("spec", {})
        if wanted:
            spec["ephemeralContainers"] = wanted
        else:
            spec.pop("ephemeralContainers", None)

    def default(self, obj: Obj) -> None:
        defaults.default_ephemeral_containers(obj.get("spec") or {})

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_pod_ephemeral_containers_update(new, old)


class EphemeralContainersREST(Subresource):
    """GET, PUT and PATCH of the Pod through :class:`EphemeralContainersStrategy`."""

    def __init__(self, strategy: EphemeralContainersStrategy) -> None:
        self.strategy = strategy

    async def get(self, call: Call) -> Response:
        return await handlers.get(call)

    async def update(self, call: Call) -> Response:
        return await handlers.update(call, strategy=self.strategy)

    async def patch(self, call: Call) -> Response:
        return await handlers.patch_object(call, strategy=self.strategy)
