"""serviceaccounts/token: TokenRequest, a signed token for a ServiceAccount (``kubectl create token``).

kube-apiserver's ``TokenREST``: a POST of an ``authentication.k8s.io/v1``
TokenRequest to ``serviceaccounts/<name>/token`` answers the same object with
``status.token`` (a JWT signed with the APIServer's ServiceAccount key, see
:mod:`apiserver.authentication.serviceaccount`) and its
``expirationTimestamp``. The spec:

- ``audiences``: what the token is for (default: the API audiences, so the
  APIServer accepts it);
- ``expirationSeconds``: default 3600, at least 600, at most 2^32, and capped
  at ``--service-account-max-token-expiration`` when that is set (with a
  Warning saying so). The 3607 s that ServiceAccount admission asks for in a
  Pod's ``kube-api-access`` volume is Kubernetes' signal for its safe
  transition to bound tokens: with ``--service-account-extend-token-expiration``
  (on by default) such a token, bound to a Pod and for the API's audiences,
  stays valid for a year (``exp``) while ``status.expirationTimestamp`` and the
  ``kubernetes.io.warnafter`` claim say 3607 s, so that a client which never
  reloads its token file keeps working and is only warned about;
- ``boundObjectRef``: a Pod, Secret or Node whose deletion ends the token;
  its ``uid``, when given, must be the object's (409 otherwise); a Pod must
  run as this ServiceAccount (400 otherwise) and, when it is scheduled, its
  Node is recorded too.

The request passes admission (NodeRestriction lets a kubelet ask only for
tokens bound to its own Pods). Nothing is stored.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import TYPE_CHECKING, Any, Final

from starlette.responses import Response

from apiserver import errors
from apiserver.endpoints import body
from apiserver.endpoints.responses import json_response, warning_headers
from apiserver.registry.resource import Subresource
from apiserver.validation.field import FieldError, invalid_message
from machinery.api import kinds

if TYPE_CHECKING:
    from apiserver.endpoints.request import Call

Obj = dict[str, Any]
DEFAULT_EXPIRATION_SECONDS: Final = 3600
MIN_EXPIRATION_SECONDS: Final = 600
MAX_EXPIRATION_SECONDS: Final = 2**32
#: What a projected token of ServiceAccount admission asks for, and what such a token is extended to
#: (Kubernetes' ``WarnOnlyBoundTokenExpirationSeconds`` and ``ExpirationExtensionSeconds``).
WARN_ONLY_EXPIRATION_SECONDS: Final = 3607
EXTENDED_EXPIRATION_SECONDS: Final = 365 * 24 * 3600
_BINDABLE: Final[dict[str, kinds.ResourceInfo[Any]]] = {"Pod": kinds.PODS, "Secret": kinds.SECRETS,
                                                         "Node": kinds.NODES}


def validate_token_request(spec: Obj) -> list[FieldError]:
    seconds = spec.get("expirationSeconds")
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        return [FieldError.invalid("spec.expirationSeconds", seconds, "must be an integer")]
    if seconds < MIN_EXPIRATION_SECONDS:
        return [FieldError.invalid("spec.expirationSeconds", seconds,
                                   "may not specify a duration less than 10 minutes")]
    if seconds > MAX_EXPIRATION_SECONDS:
        return [FieldError.invalid("spec.expirationSeconds", seconds,
                                   "may not specify a duration larger than 2^32 seconds")]
    return []


class TokenREST(Subresource):
    async def create(self, call: Call) -> Response:
        assert call.name is not None
        server = call.server
        request = await body.decode_object(call, body.write_options(call), kind="TokenRequest",
                                           api_version="authentication.k8s.io/v1")
        request["metadata"] = {**(request.get("metadata") or {}), "creationTimestamp": None}
        spec: Obj = request["spec"] if isinstance(request.get("spec"), dict) else {}
        request["spec"] = spec
        if spec.get("expirationSeconds") is None:
            spec["expirationSeconds"] = DEFAULT_EXPIRATION_SECONDS
        errs = validate_token_request(spec)
        if errs:
            raise errors.APIError(422, "Invalid", invalid_message("TokenRequest", "", errs),
                                  {"group": "authentication.k8s.io", "kind": "TokenRequest",
                                   "causes": [e.cause() for e in errs]})
        namespace = call.namespace or ""
        account = (await server.store(kinds.SERVICE_ACCOUNTS).get(namespace, call.name)).obj
        pod = secret = node = None
        ref = spec.get("boundObjectRef")
        if ref:
            kind = ref.get("kind") or ""
            group = (ref.get("apiVersion") or "v1").rpartition("/")[0]
            info: kinds.ResourceInfo[Any] | None = _BINDABLE.get(kind) if group == "" else None
            if info is None:
                raise errors.bad_request(f"cannot bind token to object of type {_gvk(ref)}")
            bound = (await server.store(info).get(namespace if info.namespaced else None,
                                                  ref.get("name") or "")).obj
            uid = (bound.get("metadata") or {}).get("uid")
            if ref.get("uid") and ref["uid"] != uid:
                raise errors.APIError(409, "Conflict", f'Operation cannot be fulfilled on {kind} "{ref.get("name")}": '
                                      f"the UID in the bound object reference ({ref['uid']}) does not match the "
                                      f"UID in record ({uid}). The object might have been deleted and then "
                                      "recreated", {"name": ref.get("name"), "kind": kind})
            if kind == "Pod":
                pod = bound
                pod_account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
                if pod_account != call.name:
                    raise errors.bad_request(f'cannot bind token for serviceaccount "{call.name}" to pod running '
                                             f'with serviceaccount "{pod_account}"')
                node_name = (pod.get("spec") or {}).get("nodeName")
                if node_name:
                    node_entry = server.store(kinds.NODES).cache.get(kinds.NODES.etcd_key(None, node_name))
                    node = node_entry.obj if node_entry is not None else None
            elif kind == "Secret":
                secret = bound
            else:
                node = bound
        admission = call.admission(dry_run=False)
        await admission.mutate(request, None)
        await admission.validate(request, None)
        if not spec.get("audiences"):
            spec["audiences"] = list(server.authenticator.api_audiences)
        seconds = int(spec["expirationSeconds"])
        security = server.settings.security
        maximum = int(security.service_account_max_token_expiration)
        warnings: list[str] = []
        if maximum > 0 and seconds > maximum:
            warnings.append(f"requested expiration of {seconds} seconds shortened to {maximum} seconds")
            seconds = spec["expirationSeconds"] = maximum
        valid_for, warn_after = seconds, None
        if (security.service_account_extend_token_expiration and pod is not None
                and seconds == WARN_ONLY_EXPIRATION_SECONDS
                and set(spec["audiences"]) <= set(server.authenticator.api_audiences)):
            valid_for, warn_after = EXTENDED_EXPIRATION_SECONDS, seconds
        generator = server.token_generator
        now = time.time()
        claims = generator.claims(account, audiences=spec["audiences"], expiration_seconds=valid_for, pod=pod,
                                  secret=secret, node=node, now=now, warn_after_seconds=warn_after)
        expires = dt.datetime.fromtimestamp(int(now) + seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        request["status"] = {"token": generator.sign(claims), "expirationTimestamp": expires}
        return json_response(request, 201, dict(warning_headers(warnings)))


def _gvk(ref: Obj) -> str:
    """``schema.GroupVersionKind.String()``: ``/v1, Kind=ConfigMap`` or ``apps/v1, Kind=Deployment``."""
    api_version = ref.get("apiVersion") or ""
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={ref.get('kind') or ''}"
