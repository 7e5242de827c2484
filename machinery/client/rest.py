"""The typed async client: kubesim's ``client-go`` REST client over one httpx connection pool.

One :class:`Client` per process. Requests are httpx requests on one transport
(by default :class:`~machinery.client.transport.LeanTransport`: keep-alive
HTTP/1.1, a pool large enough for many concurrent requests plus the long-lived
watch streams, each of which holds a connection for its lifetime). The client
builds URLs from the resource table, sends JSON, and returns the official
models. Failures come back as the typed exceptions of
:mod:`machinery.client.errors`; connection failures as ``httpx.TransportError``.

Speed matters here: the scheduler binds hundreds of Pods a second and one
kubelet_sim renews 500 Leases a second. Measured per request on 2 cores:
httpx's stock client and transport cost about 1.7 ms of CPU, the same client
on the lean transport 0.28 ms, and an ``httpx.Request`` handed straight to the
transport 0.18 ms. On the lean transport (the default) plain requests skip
httpx altogether: their request line and pre-encoded headers go to its
connection pool as bytes, which saves the building of an ``httpx.URL``,
``httpx.Request`` and ``httpx.Response`` per request: a Lease renewal against a
loopback server that answers at once costs the client 63 µs of CPU instead of
150. Any other transport (tests' ``httpx.MockTransport``) gets an
``httpx.Request``. Only watches (long-lived streams) go through
``httpx.AsyncClient``.

Identities: :meth:`Client.with_token` gives a client that shares this one's
connections but sends another bearer token, so one process can act as many
users over one pool (kubelet_sim's nodes, the controller-manager's per-controller
ServiceAccounts); :meth:`Client.set_token` replaces a token in place (a refreshed
ServiceAccount token).

Overload: an answer 429 (the APIServer's in-flight limit) or 5xx that carries
``Retry-After`` is retried after that many seconds, up to :attr:`Client.max_retries`
times, as client-go's ``checkWait`` does; the caller sees the error only when the
server is still refusing after that. Without it every component turned each
refusal into a failure of its own (a requeue, a rescheduling, a backoff of up
to 30 s) and sent it again within milliseconds, into the same full server.

Concurrency: every method may be called from many tasks at once; the client
keeps no per-request state. :meth:`Client.watch` returns an async generator
that must be consumed by one task and closed (``contextlib.aclosing``) so its
connection goes back to the pool at once.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import enum
from collections.abc import AsyncGenerator, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Self, TypeVar
from urllib.parse import urlencode

import httpx
import orjson
from pydantic import BaseModel

from machinery import metrics
from machinery.api.kinds import PODS, SERVICE_ACCOUNTS
from machinery.client.config import ClientConfig
from machinery.client.errors import Expired, UnexpectedResponse, error_from_response
from machinery.client.objects import ObjectList, Transform, TypedResource, decode, to_wire
from machinery.client.transport import ConnectionPool, LeanTransport, Timeouts, origin_of
from machinery.client.watch import Bookmark, WatchEvent, decode_event, split_lines

M = TypeVar("M", bound=BaseModel)

#: A request body: a model, or a dict already in wire form (cheaper on hot paths).
Body = BaseModel | Mapping[str, Any]
PropagationPolicy = Literal["Orphan", "Background", "Foreground"]

#: Extra seconds a watch read may stay silent beyond the server-side ``timeoutSeconds``.
_WATCH_READ_SLACK = 30.0


class PatchType(enum.StrEnum):
    """The patch content types the APIServer accepts."""

    JSON = "application/json-patch+json"
    MERGE = "application/merge-patch+json"
    STRATEGIC_MERGE = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"


class Client:
    """Typed requests against one APIServer.

    >>> async with Client(ClientConfig("http://127.0.0.1:6443")) as client:
    ...     pod = await client.get(PODS, "web-1", namespace="default")
    """

    def __init__(self, config: ClientConfig, *, user_agent: str = "kubesim",
                 max_connections: int = 512, timeout: float = 60.0,
                 transport: httpx.AsyncBaseTransport | None = None, max_retries: int = 10) -> None:
        headers = {"Accept": "application/json", "User-Agent": user_agent}
        #: Where and as whom this client talks (other clients of the same identity start from it).
        self.config = config
        self._transport = transport or LeanTransport(ConnectionPool(
            max_connections=max_connections, ssl_context=config.ssl_context(),
            server_hostname=config.tls.server_name))
        self._owner = True
        #: Times a request answered 429 or 5xx with ``Retry-After`` is sent again after that many
        #: seconds (client-go's ``Request.MaxRetries``, 10 by default); the last answer is the error.
        self.max_retries = max_retries
        self._max_connections = max_connections
        self._headers = headers
        #: Connections without the client certificate, shared by every :meth:`with_token` client.
        self._token_pair: tuple[httpx.AsyncBaseTransport, httpx.AsyncClient] | None = None
        self._base = httpx.URL(config.server)
        self._prefix = self._base.raw_path.rstrip(b"/")
        host = self._base.netloc
        self._common_headers = [(b"Host", host)] + [(k.encode(), v.encode()) for k, v in headers.items()]
        self._plain_headers = self._common_headers
        self._watch_headers: dict[str, str] = {}
        self.set_token(config.token)
        self._timeouts = {"connect": 5.0, "read": timeout, "write": timeout, "pool": None}
        self._origin = origin_of(config.server)
        self._lean_timeouts = Timeouts(5.0, timeout, timeout)
        self._timeout = timeout
        self._http = self._stream_client(config.server, self._transport)
        self.config = config

    def _stream_client(self, server: str, transport: httpx.AsyncBaseTransport) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=server, headers=self._headers, transport=transport,
            # A request waits for a free connection rather than failing when the pool is busy.
            timeout=httpx.Timeout(self._timeout, connect=5.0, pool=None),
            limits=httpx.Limits(max_connections=self._max_connections,
                                max_keepalive_connections=self._max_connections // 2),
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    def set_token(self, token: str | None) -> None:
        """Send ``token`` as the bearer token from now on (None: no Authorization header)."""
        if token:
            auth = f"Bearer {token}"
            self._plain_headers = [*self._common_headers, (b"Authorization", auth.encode())]
            self._watch_headers = {"Authorization": auth}
        else:
            self._plain_headers = self._common_headers
            self._watch_headers = {}
        self._plain_head = b"".join(b"%s: %s\r\n" % pair for pair in self._plain_headers)

    def with_token(self, token: str) -> Client:
        """A client that authenticates with ``token`` instead, on connections this one owns.

        A TLS connection that presents a client certificate is that certificate's
        user whatever token it carries (the APIServer tries certificates first), so
        when this client has one, token clients share a second pool of connections
        made without it; otherwise they share this client's. Closing a token client
        closes nothing: the connections belong to this client.
        """
        view = copy.copy(self)
        view._owner = False
        if self.config.tls.cert is not None:
            if self._token_pair is None:
                config = self.config
                plain = dataclasses.replace(config, tls=dataclasses.replace(config.tls, cert=None, key=None))
                transport = LeanTransport(ConnectionPool(max_connections=self._max_connections,
                                                         ssl_context=plain.ssl_context(),
                                                         server_hostname=config.tls.server_name))
                self._token_pair = (transport, self._stream_client(config.server, transport))
            view._transport, view._http = self._token_pair
        view.set_token(token)
        return view

    async def aclose(self) -> None:
        if not self._owner:
            return
        await self._http.aclose()
        await self._transport.aclose()
        if self._token_pair is not None:
            await self._token_pair[1].aclose()
            await self._token_pair[0].aclose()

    # --- reads -----------------------------------------------------------------------------

    async def get(self, resource: TypedResource[M], name: str, *, namespace: str | None = None) -> M:
        data = await self._request("GET", resource, resource.path(namespace, name), name=name)
        return decode(resource.model, data)

    async def list(self, resource: TypedResource[M], *, namespace: str | None = None,
                   label_selector: str | None = None, field_selector: str | None = None,
                   resource_version: str | None = None, limit: int | None = 500,
                   transform: Transform | None = None) -> ObjectList[M]:
        """Every object (each through ``transform`` first, when given), following ``continue`` tokens page by page.

        As client-go's pager does, a continue token that has expired (the list's
        snapshot was compacted away mid-way) restarts the list in one unpaged request.
        """
        params = _selectors(label_selector, field_selector)
        if resource_version is not None:
            params["resourceVersion"] = resource_version
        path = resource.path(namespace)
        items: list[M] = []
        list_rv = ""
        page_params = dict(params, limit=str(limit)) if limit else dict(params)
        while True:
            try:
                data = await self._request("GET", resource, path, params=page_params)
            except Expired:
                if "continue" not in page_params:
                    raise
                items, list_rv, page_params = [], "", dict(params)
                continue
            meta = data.get("metadata") or {}
            list_rv = list_rv or meta.get("resourceVersion") or ""
            items.extend(decode(resource.model, item, transform) for item in data.get("items") or ())
            token = meta.get("continue")
            if not token:
                return ObjectList(items, list_rv)
            # A continued page is read at the first page's snapshot; it must not name a version.
            page_params = {k: v for k, v in page_params.items() if k != "resourceVersion"}
            page_params["continue"] = token

    async def get_path(self, path: str, *, params: Mapping[str, str] | None = None,
                       resource: TypedResource[Any] | None = None) -> dict[str, Any]:
        """GET any JSON document of the APIServer (discovery, an aggregated API such as metrics.k8s.io).

        ``resource`` only names what errors are about.
        """
        return await self._request("GET", resource or PODS, path, params=params)

    def watch(self, resource: TypedResource[M], *, namespace: str | None = None,
              resource_version: str | None = None, label_selector: str | None = None,
              field_selector: str | None = None, timeout_seconds: int | None = None,
              allow_bookmarks: bool = True,
              transform: Transform | None = None) -> AsyncGenerator[WatchEvent[M] | Bookmark, None]:
        """Events after ``resource_version`` (their objects through ``transform`` first, when given), until the
        server ends the stream.

        An ``ERROR`` event raises its Status (``Expired`` when the version is too old).
        Close the iterator when done (``async with contextlib.aclosing(client.watch(...))``).
        """
        params = _selectors(label_selector, field_selector)
        params["watch"] = "true"
        if resource_version is not None:
            params["resourceVersion"] = resource_version
        if allow_bookmarks:
            params["allowWatchBookmarks"] = "true"
        if timeout_seconds is not None:
            params["timeoutSeconds"] = str(timeout_seconds)
        read = None if timeout_seconds is None else timeout_seconds + _WATCH_READ_SLACK
        return self._watch(resource, resource.path(namespace), params,
                           httpx.Timeout(self._timeout, connect=5.0, read=read, pool=None), transform)

    async def _watch(self, resource: TypedResource[M], path: str, params: dict[str, str],
                     timeout: httpx.Timeout,
                     transform: Transform | None) -> AsyncGenerator[WatchEvent[M] | Bookmark, None]:
        async with self._http.stream("GET", path, params=params, timeout=timeout,
                                     headers=self._watch_headers) as response:
            metrics.REST_CLIENT_REQUESTS.labels(str(response.status_code), "WATCH").inc()
            if response.status_code != 200:
                body = await response.aread()
                raise error_from_response(response.status_code, body, method="GET",
                                          group_resource=resource.group_resource)
            async for line in split_lines(response.aiter_bytes()):
                yield decode_event(resource.model, line, transform)

    # --- writes ----------------------------------------------------------------------------

    async def create(self, resource: TypedResource[M], obj: Body, *, namespace: str | None = None,
                     field_manager: str | None = None) -> M:
        body = self._body(resource, obj)
        ns = namespace or _namespace_of(body)
        data = await self._request("POST", resource, resource.path(self._ns(resource, ns)), body=body,
                                   params=_manager(field_manager), name=_name_of(body))
        return decode(resource.model, data)

    async def update(self, resource: TypedResource[M], obj: Body, *, field_manager: str | None = None,
                     subresource: str | None = None) -> M:
        """PUT the whole object (or a subresource such as a Namespace's ``finalize``).

        Its ``metadata.resourceVersion`` guards against lost updates (409).
        """
        return await self._put(resource, obj, subresource, field_manager)

    async def update_status(self, resource: TypedResource[M], obj: Body, *,
                            field_manager: str | None = None) -> M:
        """PUT to the ``/status`` subresource: only the status changes."""
        return await self._put(resource, obj, "status", field_manager)

    async def _put(self, resource: TypedResource[M], obj: Body, subresource: str | None,
                   field_manager: str | None) -> M:
        body = self._body(resource, obj)
        name = _name_of(body)
        if not name:
            raise ValueError("update needs metadata.name")
        path = resource.path(self._ns(resource, _namespace_of(body)), name, subresource)
        data = await self._request("PUT", resource, path, body=body, params=_manager(field_manager),
                                   name=name)
        return decode(resource.model, data)

    async def patch(self, resource: TypedResource[M], name: str,
                    patch: Mapping[str, Any] | Sequence[Mapping[str, Any]] | str, *,
                    namespace: str | None = None, patch_type: PatchType = PatchType.STRATEGIC_MERGE,
                    subresource: str | None = None, field_manager: str | None = None,
                    force: bool | None = None) -> M:
        """PATCH with any of the four patch types.

        ``patch`` is a list of operations for JSON patch, a dict for the merge
        patches and apply (or, for apply, a YAML string). Apply needs
        ``field_manager``; ``force`` takes conflicting fields over.
        """
        params = _manager(field_manager)
        if force is not None:
            params["force"] = "true" if force else "false"
        content = patch.encode() if isinstance(patch, str) else orjson.dumps(patch)
        data = await self._request("PATCH", resource, resource.path(self._ns(resource, namespace), name,
                                                                    subresource),
                                   content=content, content_type=patch_type.value, params=params, name=name)
        return decode(resource.model, data)

    async def delete(self, resource: TypedResource[M], name: str, *, namespace: str | None = None,
                     uid: str | None = None, resource_version: str | None = None,
                     propagation_policy: PropagationPolicy | None = None,
                     grace_period_seconds: int | None = None) -> M | None:
        """DELETE, with optional preconditions (``uid``, ``resource_version``: 409 if they differ).

        Returns the object when the server answers with it (deletion is graceful
        or waits on finalizers), ``None`` when it answers with a success Status.
        """
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if preconditions:
            options["preconditions"] = preconditions
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        data = await self._request("DELETE", resource, resource.path(self._ns(resource, namespace), name),
                                   body=options, name=name)
        if data.get("kind") == "Status":
            return None
        return decode(resource.model, data)

    async def bind(self, namespace: str, name: str, node_name: str, *, uid: str | None = None,
                   annotations: Mapping[str, str] | None = None) -> None:
        """``POST pods/{name}/binding``: assign a pending Pod to a node (the scheduler's write).

        ``uid`` makes the binding fail if the Pod was replaced by another of the same name;
        ``annotations`` are copied onto the Pod in the same write, as kube-apiserver does.
        """
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if uid:
            metadata["uid"] = uid
        if annotations:
            metadata["annotations"] = dict(annotations)
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": metadata,
                "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
        await self._request("POST", PODS, PODS.path(namespace, name, "binding"), body=body, name=name)

    async def create_token(self, namespace: str, name: str, *, expiration_seconds: int | None = None,
                           audiences: Sequence[str] = (), bound_object: Mapping[str, str] | None = None
                           ) -> tuple[str, str]:
        """``POST serviceaccounts/{name}/token`` (client-go's ``CreateToken``): (token, expirationTimestamp)."""
        spec: dict[str, Any] = {}
        if expiration_seconds is not None:
            spec["expirationSeconds"] = expiration_seconds
        if audiences:
            spec["audiences"] = list(audiences)
        if bound_object is not None:
            spec["boundObjectRef"] = dict(bound_object)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": {}, "spec": spec}
        data = await self._request("POST", SERVICE_ACCOUNTS, SERVICE_ACCOUNTS.path(namespace, name, "token"),
                                   body=body, name=name)
        status = data.get("status") or {}
        return str(status.get("token") or ""), str(status.get("expirationTimestamp") or "")

    async def review(self, resource: TypedResource[Any], spec: Mapping[str, Any]) -> dict[str, Any]:
        """``POST`` a review (TokenReview, SubjectAccessReview...) and return the answer as wire JSON.

        Reviews are never stored: what matters is the ``status`` the APIServer fills in."""
        body = {"apiVersion": resource.api_version, "kind": resource.kind, "metadata": {}, "spec": dict(spec)}
        return await self._request("POST", resource, resource.path(None), body=body)

    # --- plumbing --------------------------------------------------------------------------

    @staticmethod
    def _ns(resource: TypedResource[Any], namespace: str | None) -> str | None:
        if resource.namespaced and not namespace:
            raise ValueError(f"a namespace is required for {resource.group_resource}")
        return namespace if resource.namespaced else None

    @staticmethod
    def _body(resource: TypedResource[Any], obj: Body) -> dict[str, Any]:
        body = to_wire(obj)
        body.setdefault("apiVersion", resource.api_version)
        body.setdefault("kind", resource.kind)
        return body

    async def _request(self, method: str, resource: TypedResource[Any], path: str, *,
                       params: Mapping[str, str] | None = None, body: Mapping[str, Any] | None = None,
                       content: bytes | None = None, content_type: str = "application/json",
                       name: str = "") -> dict[str, Any]:
        if body is not None:
            content = orjson.dumps(body)
        target = self._prefix + path.encode()
        if params:
            target += b"?" + urlencode(params).encode()
        tries = 0
        while True:
            transport = self._transport
            if type(transport) is LeanTransport:
                code, retry_after, answer = await self._exchange(transport, method, target, content, content_type)
            else:
                code, retry_after, answer = await self._via_httpx(method, target, content, content_type)
            metrics.REST_CLIENT_REQUESTS.labels(str(code), method).inc()
            # client-go's checkWait: a 429 or 5xx that says when to come back is tried again then.
            if ((code == 429 or code >= 500) and tries < self.max_retries
                    and retry_after is not None and retry_after.isdigit()):
                tries += 1
                await asyncio.sleep(int(retry_after))
                continue
            break
        if not 200 <= code < 300:
            raise error_from_response(
                code, answer, method=method, group_resource=resource.group_resource, name=name,
                retry_after=int(retry_after) if retry_after and retry_after.isdigit() else None)
        try:
            data = orjson.loads(answer)
        except orjson.JSONDecodeError:
            raise UnexpectedResponse(
                f"{method} {path} answered {code} with a body that is not JSON: {answer[:200]!r}") from None
        if not isinstance(data, dict):
            raise UnexpectedResponse(f"{method} {path} answered with JSON that is not an object")
        return data

    async def _exchange(self, transport: LeanTransport, method: str, target: bytes, content: bytes | None,
                        content_type: str) -> tuple[int, str | None, bytes]:
        """The request as bytes on the lean transport's pool: status, Retry-After and body."""
        head = b"%s %s HTTP/1.1\r\n%s" % (method.encode(), target, self._plain_head)
        if content is not None:
            head += b"Content-Type: %s\r\nContent-Length: %d\r\n" % (content_type.encode(), len(content))
        elif method in ("POST", "PUT", "PATCH"):
            head += b"Content-Length: 0\r\n"
        reply = await transport.pool.exchange(self._origin, head + b"\r\n", content or b"", self._lean_timeouts)
        retry_after = reply.header(b"Retry-After") if not 200 <= reply.code < 300 else None
        return reply.code, retry_after.decode("latin-1") if retry_after else None, reply.content or b""

    async def _via_httpx(self, method: str, target: bytes, content: bytes | None,
                         content_type: str) -> tuple[int, str | None, bytes]:
        """The request as an ``httpx.Request`` on any other transport."""
        headers = self._plain_headers
        if content is not None:
            headers = [*headers, (b"Content-Type", content_type.encode())]
        request = httpx.Request(method, self._base.copy_with(raw_path=target), headers=headers, content=content,
                                extensions={"timeout": self._timeouts})
        response = await self._transport.handle_async_request(request)
        try:
            await response.aread()
        finally:
            await response.aclose()
        return response.status_code, response.headers.get("Retry-After"), response.content


def _selectors(label_selector: str | None, field_selector: str | None) -> dict[str, str]:
    params: dict[str, str] = {}
    if label_selector:
        params["labelSelector"] = label_selector
    if field_selector:
        params["fieldSelector"] = field_selector
    return params


def _manager(field_manager: str | None) -> dict[str, str]:
    return {"fieldManager": field_manager} if field_manager else {}


def _namespace_of(body: Mapping[str, Any]) -> str | None:
    ns = (body.get("metadata") or {}).get("namespace")
    return ns if isinstance(ns, str) and ns else None


def _name_of(body: Mapping[str, Any]) -> str:
    name = (body.get("metadata") or {}).get("name")
    return name if isinstance(name, str) else ""

