"""The OpenAPI v3 documents kubesim serves, one per group-version, built from the registry.

kubectl reads them for ``explain``, to learn whether a kind accepts
``fieldValidation`` (then it validates on the server instead of in the
client) and to compute strategic merge patches for ``apply``. So each
document has what kube-apiserver's has: a path item per REST path, each
operation with its ``operationId``, ``x-kubernetes-action``,
``x-kubernetes-group-version-kind`` and the query parameters Kubernetes
declares; and ``components.schemas`` with every definition those operations
reach. The schemas come from Kubernetes' own definitions
(:mod:`machinery.api.schema`), converted from JSON Schema 2020-12 to the
OpenAPI 3.0 form Kubernetes publishes.

Documents are built on first use and kept, as bytes with their hash (the
``?hash=`` of the index and the ETag), until the registry changes (a
CustomResourceDefinition established or removed). They are only read, so any
task may read them at any time. The Swagger 2.0 document of ``/openapi/v2``
(:mod:`apiserver.openapiv2`) is converted from these, so both always say the
same.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import orjson

from apiserver.negotiation import SERIALIZED_SUBTYPES
from apiserver.registry.registry import Registry
from apiserver.registry.resource import Resource
from machinery.api import schema
from machinery.api.kinds import ResourceInfo, Subresource

Json = dict[str, Any]

_SCHEMA_REF: Final = "#/components/schemas/"
_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1."
_STATUS: Final = _META + "Status"
_DELETE_OPTIONS: Final = _META + "DeleteOptions"
_PATCH: Final = _META + "Patch"
_WATCH_EVENT: Final = _META + "WatchEvent"
_API_RESOURCE_LIST: Final = _META + "APIResourceList"

_MEDIA_TYPES: Final = tuple(f"application/{subtype}" for subtype in SERIALIZED_SUBTYPES)
_STREAM_MEDIA_TYPES: Final = ("application/json;stream=watch",)
_PATCH_MEDIA_TYPES: Final = (
    "application/apply-patch+yaml", "application/json-patch+json",
    "application/merge-patch+json", "application/strategic-merge-patch+json",
)


@dataclass(frozen=True, slots=True)
class Document:
    """A serialized document and its hash: uppercase hex SHA-512 of the bytes, as kube-openapi computes it."""

    body: bytes
    hash: str

    @classmethod
    def of(cls, content: Json) -> Document:
        body = orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
        return cls(body, hashlib.sha512(body).hexdigest().upper())


def document_path(group: str, version: str) -> str:
    """The key of a group-version in ``/openapi/v3`` (``api/v1``, ``apis/coordination.k8s.io/v1``)."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def document(registry: Registry, path: str) -> Document | None:
    """One group-version's OpenAPI v3 document (``api/v1``, ``apis/apps/v1``), or None if not served."""
    for group, version in registry.group_versions():
        if document_path(group, version) == path:
            def build(group: str = group, version: str = version) -> Document:
                return Document.of(_build(registry, group, version))
            doc: Document = registry.memo(("openapi-v3", path), build)
            return doc
    return None


def documents(registry: Registry) -> dict[str, Document]:
    """Every served group-version's OpenAPI v3 document, keyed by :func:`document_path`."""
    out = {}
    for group, version in registry.group_versions():
        doc = document(registry, document_path(group, version))
        if doc is not None:  # None: the group-version went while this was built (a CRD removed)
            out[document_path(group, version)] = doc
    return out


def index(registry: Registry) -> Document:
    """``GET /openapi/v3``: where each group-version's document is, with its hash."""
    def build() -> Document:
        return Document.of({"paths": {
            path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={doc.hash}"}
            for path, doc in documents(registry).items()
        }})
    doc: Document = registry.memo("openapi-v3-index", build)
    return doc


# --- Parameters ---------------------------------------------------------------------------------


def _parameter(name: str, description: str, type_: str, *, where: str = "query") -> Json:
    param: Json = {"description": description, "in": where, "name": name,
                   "schema": {"type": type_, "uniqueItems": True}}
    if where == "path":
        param["required"] = True
    return param


_PRETTY: Final = _parameter("pretty", "If 'true', then the output is pretty printed. Defaults to 'false' "
                            "unless the user-agent indicates a browser or command-line HTTP tool "
                            "(curl and wget).", "string")
_NAMESPACE: Final = _parameter("namespace", "object name and auth scope, such as for teams and projects",
                               "string", where="path")

# ListOptions is not among the definitions, so its query parameters are spelled out here,
# with the words Kubernetes publishes for them.
_LIST_PARAMETERS: Final = {p["name"]: p for p in (
    _parameter("allowWatchBookmarks", "allowWatchBookmarks requests watch events with type \"BOOKMARK\". "
               "Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the "
               "server's discretion. Clients should not assume bookmarks are returned at any specific "
               "interval, nor may they assume the server will send any BOOKMARK event during a session. "
               "If this is not a watch, this field is ignored.", "boolean"),
    _parameter("continue", "The continue option should be set when retrieving more results from the "
               "server. Since this value is server defined, clients may only use the continue value from "
               "a previous query result with identical query parameters (except for the value of "
               "continue) and the server may reject a continue value it does not recognize. If the "
               "specified continue value is no longer valid whether due to expiration (generally five to "
               "fifteen minutes) or a configuration change on the server, the server will respond with a "
               "410 ResourceExpired error together with a continue token. If the client needs a "
               "consistent list, it must restart their list without the continue field. Otherwise, the "
               "client may send another list request with the token received with the 410 error, the "
               "server will respond with a list starting from the next key, but from the latest snapshot, "
               "which is inconsistent from the previous list results - objects that are created, "
               "modified, or deleted after the first list request will be included in the response, as "
               "long as their keys are after the \"next key\".\n\nThis field is not supported when watch "
               "is true. Clients may start a watch from the last resourceVersion value returned by the "
               "server and not miss any modifications.", "string"),
    _parameter("fieldSelector", "A selector to restrict the list of returned objects by their fields. "
               "Defaults to everything.", "string"),
    _parameter("labelSelector", "A selector to restrict the list of returned objects by their labels. "
               "Defaults to everything.", "string"),
    _parameter("limit", "limit is a maximum number of responses to return for a list call. If more items "
               "exist, the server will set the `continue` field on the list metadata to a value that can "
               "be used with the same initial query to retrieve the next set of results. Setting a limit "
               "may return fewer than the requested amount of items (up to zero items) in the event all "
               "requested objects are filtered out and clients should only use the presence of the "
               "continue field to determine whether more results are available. Servers may choose not "
               "to support the limit argument and will return all of the available results. If limit is "
               "specified and the continue field is empty, clients may assume that no more results are "
               "available. This field is not supported if watch is true.\n\nThe server guarantees that "
               "the objects returned when using continue will be identical to issuing a single list call "
               "without a limit - that is, no objects created, modified, or deleted after the first "
               "request is issued will be included in any subsequent continued requests. This is "
               "sometimes referred to as a consistent snapshot, and ensures that a client that is using "
               "limit to receive smaller chunks of a very large result can ensure they see all possible "
               "objects. If objects are updated during a chunked list the version of the object that was "
               "present at the time the first list result was calculated is returned.", "integer"),
    _parameter("resourceVersion", "resourceVersion sets a constraint on what resource versions a request "
               "may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/"
               "#resource-versions for details.\n\nDefaults to unset", "string"),
    _parameter("resourceVersionMatch", "resourceVersionMatch determines how resourceVersion is applied to "
               "list calls. It is highly recommended that resourceVersionMatch be set for list calls "
               "where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/"
               "api-concepts/#resource-versions for details.\n\nDefaults to unset", "string"),
    _parameter("sendInitialEvents", "`sendInitialEvents=true` may be set together with `watch=true`. In "
               "that case, the watch stream will begin with synthetic events to produce the current state "
               "of objects in the collection. Once all such events have been sent, a synthetic "
               "\"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) "
               "corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": "
               "\"true\"` annotation. Afterwards, the watch stream will proceed as usual, sending watch "
               "events corresponding to changes (subsequent to the RV) to objects watched.\n\nWhen "
               "`sendInitialEvents` option is set, we require `resourceVersionMatch` option to also be "
               "set. The semantic of the watch request is as following: - `resourceVersionMatch` = "
               "NotOlderThan\n  is interpreted as \"data at least as new as the provided "
               "`resourceVersion`\"\n  and the bookmark event is send when the state is synced\n  to a "
               "`resourceVersion` at least as fresh as the one provided by the ListOptions.\n  If "
               "`resourceVersion` is unset, this is interpreted as \"consistent read\" and the\n  bookmark "
               "event is send when the state is synced at least to the moment\n  when request started "
               "being processed.\n- `resourceVersionMatch` set to any other value or unset\n  Invalid "
               "error is returned.\n\nDefaults to true if `resourceVersion=\"\"` or `resourceVersion=\"0\"` "
               "(for backward compatibility reasons) and to false otherwise.", "boolean"),
    _parameter("timeoutSeconds", "Timeout for the list/watch call. This limits the duration of the call, "
               "regardless of any activity or inactivity.", "integer"),
    _parameter("watch", "Watch for changes to the described resources and return them as a stream of "
               "add, update, and remove notifications. Specify resourceVersion.", "boolean"),
)}

_FIELD_MANAGER: Final = ("fieldManager is a name associated with the actor or entity that is making these "
                         "changes. The value must be less than or 128 characters long, and only contain "
                         "printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.")
_FIELD_VALIDATION: Final = _parameter(
    "fieldValidation", "fieldValidation instructs the server on how to handle objects in the request "
    "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore "
    "any unknown fields that are silently dropped from the object, and will ignore all but the last "
    "duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: "
    "This will send a warning via the standard warning response header for each unknown field that is "
    "dropped from the object, and for each duplicate field that is encountered. The request will still "
    "succeed if there are no other errors, and will only persist the last of any duplicate fields. This "
    "is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown "
    "fields would be dropped from the object, or if any duplicate fields are present. The error returned "
    "from the server will contain all unknown and duplicate fields encountered.", "string")
_FORCE: Final = _parameter("force", "Force is going to \"force\" Apply requests. It means user will "
                           "re-acquire conflicting fields owned by other people. Force flag must be unset "
                           "for non-apply patch requests.", "boolean")

_LOG_PARAMETERS: Final = (
    _parameter("container", "The container for which to stream logs. Defaults to only container if there "
               "is one container in the pod.", "string"),
    _parameter("follow", "Follow the log stream of the pod. Defaults to false.", "boolean"),
    _parameter("insecureSkipTLSVerifyBackend", "insecureSkipTLSVerifyBackend indicates that the apiserver "
               "should not confirm the validity of the serving certificate of the backend it is connecting "
               "to.  This will make the HTTPS connection between the apiserver and the backend insecure. "
               "This means the apiserver cannot verify the log data it is receiving came from the real "
               "kubelet.  If the kubelet is configured to verify the apiserver's TLS credentials, it does "
               "not mean the connection to the real kubelet is vulnerable to a man in the middle attack "
               "(e.g. an attacker could not intercept the actual log data coming from the real kubelet).",
               "boolean"),
    _parameter("limitBytes", "If set, the number of bytes to read from the server before terminating the "
               "log output. This may not display a complete final line of logging, and may return "
               "slightly more or slightly less than the specified limit.", "integer"),
    _parameter("previous", "Return previous terminated container logs. Defaults to false.", "boolean"),
    _parameter("sinceSeconds", "A relative time in seconds before the current time from which to show "
               "logs. If this value precedes the time a pod was started, only logs since the pod start "
               "will be returned. If this value is in the future, no logs will be returned. Only one of "
               "sinceSeconds or sinceTime may be specified.", "integer"),
    _parameter("stream", "Specify which container log stream to return to the client. Acceptable values "
               "are \"All\", \"Stdout\" and \"Stderr\". If not specified, \"All\" is used, and both stdout "
               "and stderr are returned interleaved. Note that when \"TailLines\" is specified, \"Stream\" "
               "can only be set to nil or \"All\".", "string"),
    _parameter("tailLines", "If set, the number of lines from the end of the logs to show. If not "
               "specified, logs are shown from the creation of the container or sinceSeconds or "
               "sinceTime. Note that when \"TailLines\" is specified, \"Stream\" can only be set to nil "
               "or \"All\".", "integer"),
    _parameter("timestamps", "If true, add an RFC3339 or RFC3339Nano timestamp at the beginning of every "
               "line of log output. Defaults to false.", "boolean"),
)
# The subresources that stream text instead of reading and writing an object.
_TEXT_SUBRESOURCES: Final = {"log": _LOG_PARAMETERS}

_CONTAINER = _parameter("container", "The container in which to execute the command. Defaults to only container "
                        "if there is only one container in the pod.", "string")
_STREAM_FLAGS = (
    _parameter("stderr", "Redirect the standard error stream of the pod for this call.", "boolean"),
    _parameter("stdin", "Redirect the standard input stream of the pod for this call. Defaults to false.",
               "boolean"),
    _parameter("stdout", "Redirect the standard output stream of the pod for this call.", "boolean"),
    _parameter("tty", "TTY if true indicates that a tty will be allocated for the exec call. Defaults to false.",
               "boolean"),
)
_PROXY_PATH = _parameter("path", "Path is the URL path to use for the current proxy request.", "string")
# Connect subresources (Kubernetes' "connect" action): the options kind -> its query parameters.
_CONNECT_PARAMETERS: Final = {
    "PodExecOptions": (_parameter("command", "Command is the remote command to execute. argv array. Not executed "
                                  "within a shell.", "string"), _CONTAINER, *_STREAM_FLAGS),
    "PodAttachOptions": (_CONTAINER, *_STREAM_FLAGS),
    "PodPortForwardOptions": (_parameter("ports", "List of ports to forward Required when using WebSockets",
                                         "integer"),),
    "PodProxyOptions": (_PROXY_PATH,),
    "NodeProxyOptions": (_PROXY_PATH,),
    "ServiceProxyOptions": (_PROXY_PATH,),
}
_CONNECT_METHODS: Final = {"get": ("get", "GET"), "create": ("post", "POST"), "update": ("put", "PUT"),
                           "delete": ("delete", "DELETE"), "patch": ("patch", "PATCH")}


@functools.cache
def _delete_parameters() -> tuple[Json, ...]:
    """DeleteOptions' scalar fields, which Kubernetes also accepts as query parameters."""
    options = schema.definition(_DELETE_OPTIONS).get("properties") or {}
    params = []
    for name, prop in options.items():
        types = schema.schema_types(prop)
        if name in ("apiVersion", "kind") or "object" in types:
            continue
        # A list (dryRun) is a repeated query parameter, declared as its element type.
        type_ = "string" if "array" in types else next(iter(types))
        params.append(_parameter(name, prop.get("description", ""), type_))
    return tuple(params)


def _dry_run() -> Json:
    return next(p for p in _delete_parameters() if p["name"] == "dryRun")


def _write_parameters(*, patch: bool = False) -> list[Json]:
    if patch:
        manager = _FIELD_MANAGER + (" This field is required for apply requests (application/apply-patch) "
                                    "but optional for non-apply patch types (JsonPatch, MergePatch, "
                                    "StrategicMergePatch).")
        return [_dry_run(), _parameter("fieldManager", manager, "string"), _FIELD_VALIDATION, _FORCE]
    return [_dry_run(), _parameter("fieldManager", _FIELD_MANAGER, "string"), _FIELD_VALIDATION]


def _list_parameters(*, watch: bool = True) -> list[Json]:
    if watch:
        return list(_LIST_PARAMETERS.values())
    return [p for name, p in _LIST_PARAMETERS.items() if name not in ("allowWatchBookmarks", "watch")]


# --- Operations ---------------------------------------------------------------------------------


def _ref(definition: str) -> Json:
    return {"$ref": _SCHEMA_REF + definition}


def _content(body_schema: Json, media_types: Iterable[str]) -> Json:
    return {media_type: {"schema": body_schema} for media_type in media_types}


_RESPONSE_TEXT: Final = {"200": "OK", "201": "Created", "202": "Accepted"}


def _responses(body_schema: Json, codes: Iterable[str], media_types: Iterable[str] = _MEDIA_TYPES) -> Json:
    media = tuple(media_types)
    return {code: {"content": _content(body_schema, media), "description": _RESPONSE_TEXT[code]}
            for code in codes}


@dataclass(frozen=True, slots=True)
class _Names:
    """How Kubernetes' OpenAPI names a group-version's operations (``CoreV1``, ``coordination_v1``)."""

    group: str
    version: str

    @property
    def _group_words(self) -> str:
        parts = self.group.removesuffix(".k8s.io").split(".") if self.group else ["core"]
        return "".join(p[:1].upper() + p[1:] for p in parts)

    @property
    def operation_infix(self) -> str:
        return self._group_words + self.version[:1].upper() + self.version[1:]

    @property
    def tag(self) -> str:
        words = self._group_words
        return f"{words[:1].lower()}{words[1:]}_{self.version}"

    def operation(self, action: str, description: str, operation_id: str, *, gvk: Json | None = None,
                  parameters: Iterable[Json] = (), request: Json | None = None,
                  responses: Json) -> Json:
        op: Json = {"description": description, "operationId": operation_id,
                    "parameters": list(parameters), "responses": responses, "tags": [self.tag]}
        if request is not None:
            op["requestBody"] = request
        if gvk is not None:
            op["x-kubernetes-action"] = action
            op["x-kubernetes-group-version-kind"] = gvk
        return op


def _gvk(group: str, version: str, kind: str) -> Json:
    return {"group": group, "kind": kind, "version": version}


def _body(definition: str, *, required: bool = True) -> Json:
    request: Json = {"content": _content(_ref(definition), ("*/*",))}
    if required:
        request["required"] = True
    return request


def _patch_body() -> Json:
    return {"content": _content(_ref(_PATCH), _PATCH_MEDIA_TYPES), "required": True}


def _resource_paths(resource: Resource) -> Iterator[tuple[str, str, Json]]:
    """``(path, method, operation)`` for every operation kubesim serves on one resource."""
    ri = resource.info
    names = _Names(ri.group, ri.version)
    gv = names.operation_infix
    scope = "Namespaced" if ri.namespaced else ""
    kind = ri.kind
    gvk = _gvk(ri.group, ri.version, kind)
    obj, obj_list = _ref(ri.definition), _ref(ri.definition + "List")
    ns_params = [_NAMESPACE] if ri.namespaced else []
    name_param = _parameter("name", f"name of the {kind}", "string", where="path")
    prefix = ri.api_prefix
    collection = f"{prefix}/namespaces/{{namespace}}/{ri.plural}" if ri.namespaced else f"{prefix}/{ri.plural}"
    item = collection + "/{name}"
    watch_collection = collection.replace(prefix, prefix + "/watch", 1)
    verbs = set(ri.verbs)
    # Some kinds answer a DELETE with the object (Pods, Services...; Namespaces, which are only marked).
    returns_object = resource.strategy is not None and resource.strategy.return_deleted_object
    deleted = obj if returns_object else _ref(_STATUS)
    list_media = _MEDIA_TYPES + _STREAM_MEDIA_TYPES

    def op(action: str, description: str, operation_id: str, **kwargs: Any) -> Json:
        return names.operation(action, description, operation_id, gvk=gvk, **kwargs)

    if "list" in verbs:
        yield collection, "get", op(
            "list", f"list or watch objects of kind {kind}", f"list{gv}{scope}{kind}",
            parameters=[*ns_params, _PRETTY, *_list_parameters()],
            responses=_responses(obj_list, ["200"], list_media))
        if ri.namespaced:
            yield f"{prefix}/{ri.plural}", "get", op(
                "list", f"list or watch objects of kind {kind}", f"list{gv}{kind}ForAllNamespaces",
                parameters=[_PRETTY, *_list_parameters()], responses=_responses(obj_list, ["200"], list_media))
    if "create" in verbs:
        yield collection, "post", op(
            "post", f"create a {kind}", f"create{gv}{scope}{kind}",
            parameters=[*ns_params, _PRETTY, *_write_parameters()], request=_body(ri.definition),
            responses=_responses(obj, ["200", "201", "202"]))
    if "deletecollection" in verbs:
        yield collection, "delete", op(
            "deletecollection", f"delete collection of {kind}", f"delete{gv}Collection{scope}{kind}",
            parameters=[*ns_params, _PRETTY, *_list_parameters(watch=False), *_delete_parameters()],
            request=_body(_DELETE_OPTIONS, required=False), responses=_responses(_ref(_STATUS), ["200"]))
    item_params = [name_param, *ns_params, _PRETTY]
    if "get" in verbs:
        yield item, "get", op("get", f"read the specified {kind}", f"read{gv}{scope}{kind}",
                              parameters=item_params, responses=_responses(obj, ["200"]))
    if "update" in verbs:
        yield item, "put", op("put", f"replace the specified {kind}", f"replace{gv}{scope}{kind}",
                              parameters=[*item_params, *_write_parameters()], request=_body(ri.definition),
                              responses=_responses(obj, ["200", "201"]))
    if "patch" in verbs:
        yield item, "patch", op("patch", f"partially update the specified {kind}", f"patch{gv}{scope}{kind}",
                                parameters=[*item_params, *_write_parameters(patch=True)],
                                request=_patch_body(), responses=_responses(obj, ["200", "201"]))
    if "delete" in verbs:
        yield item, "delete", op("delete", f"delete a {kind}", f"delete{gv}{scope}{kind}",
                                 parameters=[*item_params, *_delete_parameters()],
                                 request=_body(_DELETE_OPTIONS, required=False),
                                 responses=_responses(deleted, ["200", "202"]))
    if "watch" in verbs:
        events = _responses(_ref(_WATCH_EVENT), ["200"], list_media)
        yield watch_collection + "/{name}", "get", op(
            "watch", f"watch changes to an object of kind {kind}. deprecated: use the 'watch' parameter "
            "with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.",
            f"watch{gv}{scope}{kind}", parameters=[*item_params, *_list_parameters()], responses=events)
        yield watch_collection, "get", op(
            "watchlist", f"watch individual changes to a list of {kind}. deprecated: use the 'watch' "
            "parameter with a list operation instead.", f"watch{gv}{scope}{kind}List",
            parameters=[*ns_params, _PRETTY, *_list_parameters()], responses=events)
        if ri.namespaced:
            yield f"{prefix}/watch/{ri.plural}", "get", op(
                "watchlist", f"watch individual changes to a list of {kind}. deprecated: use the 'watch' "
                "parameter with a list operation instead.", f"watch{gv}{kind}ListForAllNamespaces",
                parameters=[_PRETTY, *_list_parameters()], responses=events)
    for sub in ri.subresources:
        yield from _subresource_paths(ri, sub, names, item)


def _subresource_paths(ri: ResourceInfo[Any], sub: Subresource, names: _Names,
                       item: str) -> Iterator[tuple[str, str, Json]]:
    group, version = sub.group or ri.group, sub.version or ri.version
    gvk = _gvk(group, version, sub.kind)
    base_id = f"{names.operation_infix}{'Namespaced' if ri.namespaced else ''}{ri.kind}{sub.name.capitalize()}"
    path = f"{item}/{sub.name}"
    params = [_parameter("name", f"name of the {sub.kind}", "string", where="path"),
              *([_NAMESPACE] if ri.namespaced else []), _PRETTY]

    connect_params = _CONNECT_PARAMETERS.get(sub.kind)
    if connect_params is not None:
        text = _responses({"type": "string"}, ["200"], ("*/*",))
        for verb in sub.verbs:
            method, upper = _CONNECT_METHODS[verb]
            op_id = f"connect{names.operation_infix}{upper.capitalize()}{base_id[len(names.operation_infix):]}"
            yield path, method, names.operation("connect", f"connect {upper} requests to {sub.name} of {ri.kind}",
                                                op_id, gvk=_gvk(group, version, sub.kind),
                                                parameters=[*params, *connect_params], responses=text)
        return

    text_params = _TEXT_SUBRESOURCES.get(sub.name)
    if text_params is not None:
        text = _responses({"type": "string"}, ["200"], (*_MEDIA_TYPES, "text/plain"))
        yield path, "get", names.operation("get", f"read {sub.name} of the specified {ri.kind}",
                                           f"read{base_id}", gvk=gvk, parameters=[*params, *text_params],
                                           responses=text)
        return

    definition = schema.definition_for_gvk(group, version, sub.kind)
    if definition is None:
        raise LookupError(f"no OpenAPI definition for {group}/{version} {sub.kind} ({ri.plural}/{sub.name})")
    obj = _ref(definition)
    if "get" in sub.verbs:
        yield path, "get", names.operation("get", f"read {sub.name} of the specified {ri.kind}",
                                           f"read{base_id}", gvk=gvk, parameters=params,
                                           responses=_responses(obj, ["200"]))
    if "update" in sub.verbs:
        yield path, "put", names.operation("put", f"replace {sub.name} of the specified {ri.kind}",
                                           f"replace{base_id}", gvk=gvk,
                                           parameters=[*params, *_write_parameters()],
                                           request=_body(definition), responses=_responses(obj, ["200", "201"]))
    if "patch" in sub.verbs:
        yield path, "patch", names.operation("patch", f"partially update {sub.name} of the specified {ri.kind}",
                                             f"patch{base_id}", gvk=gvk,
                                             parameters=[*params, *_write_parameters(patch=True)],
                                             request=_patch_body(), responses=_responses(obj, ["200", "201"]))
    if "create" in sub.verbs:
        yield path, "post", names.operation("post", f"create {sub.name} of a {ri.kind}", f"create{base_id}",
                                            gvk=gvk, parameters=[*params, *_write_parameters()],
                                            request=_body(definition),
                                            responses=_responses(obj, ["200", "201", "202"]))


def _hoist_common_parameters(path_item: Json) -> None:
    """Move the parameters every operation of a path shares up to the path, as Kubernetes lays them out."""
    operations = list(path_item.values())
    common = [p for p in operations[0]["parameters"]
              if all(p in other["parameters"] for other in operations[1:])]
    for op in operations:
        op["parameters"] = sorted((p for p in op["parameters"] if p not in common), key=lambda p: p["name"])
        if not op["parameters"]:
            del op["parameters"]
    if common:
        path_item["parameters"] = sorted(common, key=lambda p: p["name"])


# --- Schemas ------------------------------------------------------------------------------------


def _refs_in(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value.rsplit("/", 1)[-1]
            else:
                yield from _refs_in(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs_in(value)


def _reachable(roots: Iterable[str]) -> list[str]:
    """The definitions named in ``roots`` and every definition they refer to, transitively."""
    seen: dict[str, None] = {}
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        definition = schema.definitions().get(name)
        if definition is None:
            raise LookupError(f"the OpenAPI definitions have no {name}")
        seen[name] = None
        pending.extend(_refs_in(definition))
    return sorted(seen)


def _single_type(types: list[str]) -> str | None:
    """``["string", "null"]`` -> ``"string"``: OpenAPI 3.0 has no null type, every field is optional."""
    concrete = [t for t in types if t != "null"]
    return concrete[0] if len(concrete) == 1 else None


def _convert(node: Json) -> Json:
    """One schema from JSON Schema 2020-12 (``$defs``, type lists) to OpenAPI 3.0 as Kubernetes writes it."""
    out: Json = {}
    for key, value in node.items():
        if key == "$ref":
            continue
        if key == "type" and isinstance(value, list):
            single = _single_type(value)
            if single is not None:
                out["type"] = single
        elif key == "properties":
            out[key] = {name: _convert(prop) for name, prop in value.items()}
        elif key in ("items", "not") or (key == "additionalProperties" and isinstance(value, dict)):
            out[key] = _convert(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [_convert(branch) for branch in value]
        else:
            out[key] = value
    if {branch.get("type") for branch in out.get("oneOf", ())} == {"integer", "string"}:
        # IntOrString: Kubernetes names the union so that clients can tell it from other unions.
        out.setdefault("format", "int-or-string")
    name = schema.ref_name(node)
    if name is None:
        return out
    # OpenAPI 3.0 ignores the siblings of a $ref, so Kubernetes wraps the reference in an allOf
    # to keep a field's description and extensions next to it.
    ref = _ref(name)
    return {"allOf": [ref], **out} if out else ref


def _component(name: str) -> Json:
    converted = _convert(schema.definition(name))
    if "x-kubernetes-group-version-kind" in converted:
        # kubernetes-validate pins apiVersion and kind of each kind with an enum; Kubernetes does not.
        for prop in ("apiVersion", "kind"):
            converted.get("properties", {}).get(prop, {}).pop("enum", None)
    return converted


def _build(registry: Registry, group: str, version: str) -> Json:
    names = _Names(group, version)
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    paths: dict[str, Json] = {f"{prefix}/": {"get": names.operation(
        "get", "get available resources", f"get{names.operation_infix}APIResources",
        responses=_responses(_ref(_API_RESOURCE_LIST), ["200"]))}}
    for resource in registry.resources():
        ri = resource.info
        if (ri.group, ri.version) == (group, version):
            for path, method, operation in _resource_paths(resource):
                paths.setdefault(path, {})[method] = operation
    for path_item in paths.values():
        _hoist_common_parameters(path_item)
    return {
        "components": {"schemas": {name: _component(name) for name in _reachable(_refs_in(paths))}},
        "info": {"title": "Kubernetes", "version": schema.KUBERNETES_VERSION},
        "openapi": "3.0.0",
        "paths": paths,
    }
