"""The subresources many kinds share, written once and parameterised: status and scale.

- :class:`StatusREST` is the resource's store with the kind's status strategy
  (kube-apiserver's ``StatusREST``): GET reads the object, PUT and PATCH write
  it with that strategy, so only what ``/status`` may change changes.
- :class:`ScaleREST` is the ``autoscaling/v1`` Scale view of any workload,
  given where its replicas, status replicas and selector live (kube-apiserver's
  ``ScaleREST`` of Deployments, ReplicaSets, StatefulSets and RCs, and the
  scale subresource of custom resources with its paths).
- :class:`NotServedREST` stands for a subresource that discovery lists but
  kubesim does not serve yet: 501 with a Status saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from apiserver import codec, errors, patch
from apiserver.endpoints import body, handlers
from apiserver.endpoints.responses import json_response
from apiserver.errors import APIError
from apiserver.registry.resource import Subresource
from apiserver.registry.store import WriteOptions
from apiserver.registry.strategy import Obj, Strategy
from apiserver.storage.objects import Entry
from apiserver.validation.field import FieldError, invalid_message
from machinery.api.labels import format_selector

if TYPE_CHECKING:
    from apiserver.endpoints.request import Call


class StatusREST(Subresource):
    """``<resource>/status``: the object, written with the status strategy."""

    def __init__(self, strategy: Strategy) -> None:
        self.strategy = strategy

    async def get(self, call: Call) -> Response:
        return await handlers.get(call)

    async def update(self, call: Call) -> Response:
        return await handlers.update(call, strategy=self.strategy)

    async def patch(self, call: Call) -> Response:
        return await handlers.patch_object(call, strategy=self.strategy)


def _get_path(obj: Obj, path: str) -> Any:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _set_path(obj: Obj, path: str, value: Any) -> None:
    parts = path.split(".")
    cur = obj
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = cur[part] = {}
        cur = nxt
    cur[parts[-1]] = value


def label_selector_text(selector: Any) -> str:
    """A selector as a Scale's ``status.selector`` writes it: a map (RCs) or a LabelSelector."""
    if not isinstance(selector, dict):
        return str(selector or "")
    if "matchLabels" in selector or "matchExpressions" in selector:
        parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
        for req in selector.get("matchExpressions") or ():
            key, op, values = req.get("key", ""), req.get("operator", ""), sorted(req.get("values") or [])
            if op == "In":
                parts.append(f"{key} in ({','.join(values)})")
            elif op == "NotIn":
                parts.append(f"{key} notin ({','.join(values)})")
            elif op == "Exists":
                parts.append(key)
            elif op == "DoesNotExist":
                parts.append(f"!{key}")
        return ",".join(sorted(parts))
    return format_selector(selector)


class ScaleREST(Subresource):
    """``<resource>/scale``: an ``autoscaling/v1`` Scale read from and written to the object."""

    def __init__(self, *, replicas: str = "spec.replicas", status_replicas: str = "status.replicas",
                 selector: str | None = "spec.selector",
                 selector_text: Callable[[Any], str] = label_selector_text) -> None:
        self.replicas = replicas
        self.status_replicas = status_replicas
        self.selector = selector
        self.selector_text = selector_text

    def scale_of(self, entry: Entry) -> dict[str, Any]:
        obj = entry.obj
        meta = obj.get("metadata") or {}
        status: dict[str, Any] = {"replicas": _get_path(obj, self.status_replicas) or 0}
        if self.selector is not None:
            text = self.selector_text(_get_path(obj, self.selector))
            if text:
                status["selector"] = text
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                         if k in meta},
            "spec": {"replicas": _get_path(obj, self.replicas) or 0},
            "status": status,
        }

    async def get(self, call: Call) -> Response:
        assert call.name is not None
        return json_response(self.scale_of(await call.store.get(call.namespace, call.name)))

    async def update(self, call: Call) -> Response:
        opts = body.write_options(call, subresource="scale")
        scale = await body.decode_object(call, opts, kind="Scale", api_version="autoscaling/v1")
        return await self._write(call, lambda _current: scale, opts)

    async def patch(self, call: Call) -> Response:
        assert call.name is not None
        ctype = codec.media_type(call.request.headers.get("content-type"))
        if ctype not in codec.PATCH_TYPES or ctype == "application/apply-patch+yaml":
            raise errors.unsupported_media_type(ctype, [t for t in codec.PATCH_TYPES if "apply" not in t])
        opts = body.write_options(call, subresource="scale")
        document = codec.parse_document(await body.read_body(call), ctype)

        # The patch applies to the Scale of the object as each attempt reads it, as kube-apiserver's
        # patcher runs inside GuaranteedUpdate: a controller's status write between the read and the
        # write is retried, never a 409, unless the patch itself names a resourceVersion.
        def patched(current: Entry) -> Obj:
            try:
                if ctype == "application/json-patch+json":
                    return patch.apply_json_patch(self.scale_of(current), document)
                if ctype == "application/merge-patch+json":
                    return patch.apply_merge_patch(self.scale_of(current), document)
                return patch.apply_strategic_merge_patch(self.scale_of(current), document,
                                                         "io.k8s.api.autoscaling.v1.Scale")
            except patch.PatchError as e:
                raise APIError(e.code, e.reason, e.message) from e

        return await self._write(call, patched, opts)

    async def _write(self, call: Call, scale_for: Callable[[Entry], Obj], opts: WriteOptions) -> Response:
        """Write the replicas of ``scale_for(current)``, guarded by the Scale's resourceVersion if it has one."""
        assert call.name is not None
        name = call.name
        wanted: list[str | None] = [None]

        def apply(obj: Obj, current: Entry) -> Obj:
            scale = scale_for(current)
            replicas = (scale.get("spec") or {}).get("replicas", 0)
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                err = FieldError.invalid("spec.replicas", replicas, "must be greater than or equal to 0")
                raise errors.invalid(call.info, name, invalid_message("Scale.autoscaling", name, [err]),
                                     [err.cause()])
            wanted[0] = (scale.get("metadata") or {}).get("resourceVersion") or None
            _set_path(obj, self.replicas, replicas)
            return obj

        entry, _ = await call.store.update_with(
            call.namespace, name, apply,
            WriteOptions(dry_run=opts.dry_run, field_manager=opts.field_manager, subresource="scale"),
            expect_rv=lambda _new: wanted[0], admission=call.admission(dry_run=opts.dry_run))
        return json_response(self.scale_of(entry))


class NotServedREST(Subresource):
    """A subresource Kubernetes serves and kubesim does not yet: a 501 Status naming it."""

    connects = True

    def __init__(self, what: str) -> None:
        self.what = what

    async def connect(self, call: Call) -> Response:
        raise APIError(501, "NotImplemented", f"{call.info.plural}/{call.subresource} is not served by kubesim "
                                              f"yet: {self.what}")
