"""Write ``machinery/api/protobuf_messages.json``: Kubernetes' protobuf field numbers, as data.

kubectl's typed clients send built-in objects as
``application/vnd.kubernetes.protobuf``. kubesim reads them with a generic
decoder (:mod:`apiserver.protobuf`) driven by the message definitions of
Kubernetes' own ``generated.proto`` files, never by hand-typed tables.

Those definitions ship inside every kubectl binary: each Go package generated
by go-to-protobuf registers its ``generated.proto`` as a gzipped
``FileDescriptorProto`` (``proto.RegisterFile``), which the linker keeps. This
script finds every gzip stream in the binary, keeps those that parse as a
``FileDescriptorProto`` named ``k8s.io/.../generated.proto``, and writes, per
message, its fields: number -> JSON name, type, repeated, referenced message
or map entry types, and three facts the decoder needs to rebuild the JSON form:

- ``gogoproto.nullable = false`` (extension 65001 on the field options, kept
  in the embedded descriptors): the Go field is not a pointer, so gogo's
  marshaller writes it even when it holds the zero value, which JSON would omit
  (``omitempty``). A field without it is a pointer: written only when set, so
  a zero written there was set by the client (``replicas: 0``).
- ``required`` in the 1.32 OpenAPI definition: Kubernetes marks required the
  fields without ``omitempty``, whose zero value JSON does write.
- inline: a struct embedded with ``json:",inline"`` (``Volume.volumeSource``)
  is a message field in protobuf but no property in the definition; in JSON
  its fields are the parent's.

The descriptors come from the installed ``kubectl.1.32`` (67 files). kubectl
does not link apiextensions-apiserver, so ``CustomResourceDefinition`` comes
from another Go binary that does, when one is installed (``anthoscli`` of the
same SDK vendors an older apiextensions/v1: fields added since are unknown to
it and skipped on decoding, as a Go decoder of that version would).

Only GA group-versions (what kubesim serves) and apimachinery's messages are
written, and only the messages reachable from them.

Run from the repository root with the project's virtualenv (``protobuf`` from
PyPI parses the descriptors; it is needed here only, not at run time)::

    .venv/bin/python hack/gen_protobuf_descriptors.py [--kubectl PATH] [--also PATH ...]

The output is committed; the APIServer reads it at import.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import zlib
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, message

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machinery.api import schema

OUTPUT = ROOT / "machinery" / "api" / "protobuf_messages.json"

#: Go's gzip writer's header (no name, no mtime, default compression): what RegisterFile's bytes start with.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00"
#: gogoproto.nullable, as a varint field of FieldOptions: tag (65001 << 3 | 0), value 0 (false).
_NOT_NULLABLE = b"\xc8\xde\x1f\x00"
_GA = re.compile(r"v\d+")
_META = "k8s.io.apimachinery.pkg.apis.meta.v1."

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    _F.TYPE_STRING: "string", _F.TYPE_BYTES: "bytes", _F.TYPE_BOOL: "bool",
    _F.TYPE_INT32: "int32", _F.TYPE_INT64: "int64", _F.TYPE_UINT32: "uint32", _F.TYPE_UINT64: "uint64",
    _F.TYPE_SINT32: "sint32", _F.TYPE_SINT64: "sint64", _F.TYPE_DOUBLE: "double", _F.TYPE_FLOAT: "float",
    _F.TYPE_FIXED32: "fixed32", _F.TYPE_FIXED64: "fixed64", _F.TYPE_SFIXED32: "sfixed32",
    _F.TYPE_SFIXED64: "sfixed64", _F.TYPE_ENUM: "int32",
}


def default_kubectl() -> Path:
    found = shutil.which("kubectl")
    if found is None:
        raise SystemExit("kubectl is not on the PATH; pass --kubectl")
    return Path(found).resolve().parent / "kubectl.1.32"


def descriptors(binary: Path) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """Every Kubernetes ``generated.proto`` descriptor embedded in a Go binary, by file name."""
    data = binary.read_bytes()
    found: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    pos = 0
    while (start := data.find(_GZIP_HEADER, pos)) >= 0:
        pos = start + 1
        stream = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            raw = stream.decompress(data[start:start + 4_000_000])
        except zlib.error:
            continue
        if not stream.eof:
            continue
        fd = descriptor_pb2.FileDescriptorProto()
        try:
            fd.ParseFromString(raw)
        except message.DecodeError:  # most gzip streams in a binary are something else
            continue
        name = fd.name
        if isinstance(name, str) and name.endswith("/generated.proto") and "k8s.io/" in name:
            # Vendored copies are named k8s.io/kubernetes/vendor/k8s.io/...: keep the package's own name.
            found[name[name.rfind("k8s.io/"):]] = fd
    return found


def _wanted(package: str) -> bool:
    if package.startswith("k8s.io.apimachinery."):
        return package.split(".")[-1] in ("v1", "resource", "runtime", "intstr")
    return bool(_GA.fullmatch(package.split(".")[-1]))


def _definition_name(message: str) -> str:
    """The OpenAPI definition of a message: ``k8s.io.api.apps.v1.Deployment`` -> ``io.k8s.api.apps.v1.Deployment``."""
    name = "io." + message
    return name.replace("io.k8s.io.apiextensions_apiserver.", "io.k8s.apiextensions-apiserver.").replace(
        "io.k8s.io.", "io.k8s.")


def _json_names(message: str) -> tuple[dict[str, str] | None, set[str]]:
    """The OpenAPI property names of a message (by their letters, lowercase) and its required ones.

    A proto field is named after the JSON name unless that is not a valid
    identifier (apiextensions' ``$ref``, ``x-kubernetes-preserve-unknown-fields``).
    None when the message has no definition of its own (map entries, apimachinery's internals).
    """
    definition = schema.definition(_definition_name(message))
    if "properties" not in definition:
        return None, set()
    by_letters = {re.sub(r"[^a-z0-9]", "", p.lower()): p for p in definition["properties"]}
    return by_letters, set(definition.get("required") or ())


def build(files: dict[str, descriptor_pb2.FileDescriptorProto]) -> dict[str, Any]:
    messages: dict[str, dict[str, Any]] = {}
    for fd in files.values():
        if not _wanted(fd.package):
            continue
        for m in fd.message_type:
            _add(messages, fd.package, m)
    reachable = _reachable(messages)
    messages = {k: v for k, v in sorted(messages.items()) if k in reachable}
    kinds: dict[str, str] = {}
    for name in messages:
        for gvk in schema.definition(_definition_name(name)).get("x-kubernetes-group-version-kind", ()):
            if not _GA.fullmatch(gvk["version"]):
                continue
            api_version = f"{gvk['group']}/{gvk['version']}" if gvk.get("group") else gvk["version"]
            kinds.setdefault(f"{api_version}/{gvk['kind']}", name)
            # apimachinery's option kinds are also registered in meta.k8s.io/v1, which the definitions omit.
            if name.startswith(_META) and api_version == "v1":
                kinds.setdefault(f"meta.k8s.io/v1/{gvk['kind']}", name)
    return {"kinds": dict(sorted(kinds.items())), "messages": messages}


def _add(messages: dict[str, dict[str, Any]], scope: str, m: descriptor_pb2.DescriptorProto) -> None:
    full = f"{scope}.{m.name}"
    entries = {f"{full}.{n.name}": n for n in m.nested_type if n.options.map_entry}
    by_letters, required = _json_names(full)
    fields: dict[str, list[Any]] = {}
    for f in m.field:
        json_name = (by_letters or {}).get(re.sub(r"[^a-z0-9]", "", f.name.lower()), f.name)
        flags = ""
        # A struct embedded with `json:",inline"` (Volume's VolumeSource, IngressRule's IngressRuleValue,
        # the LocalObjectReference of a key selector) is a proto field, but no property of the definition:
        # its fields are the parent's in JSON.
        if by_letters is not None and f.type == _F.TYPE_MESSAGE and json_name not in by_letters.values():
            flags += "i"
        if f.label == _F.LABEL_REPEATED:
            flags += "r"
        if _NOT_NULLABLE in f.options.SerializeToString():
            flags += "n"
        if json_name in required:
            flags += "q"
        type_name = f.type_name.lstrip(".")
        if f.type == _F.TYPE_MESSAGE and type_name in entries:
            key, value = sorted(entries[type_name].field, key=lambda e: e.number)
            fields[str(f.number)] = [json_name, "map", flags.replace("r", ""), _type_of(key), _type_of(value)]
        else:
            fields[str(f.number)] = [json_name, _type_of(f), flags]
    entry: dict[str, Any] = {"fields": fields}
    # go-to-protobuf wraps a named slice type (authentication's ExtraValue, meta's Verbs) in a message
    # with one repeated "items" field; their JSON form is the plain array.
    if len(m.field) == 1 and m.field[0].name == "items" and m.field[0].label == _F.LABEL_REPEATED \
            and m.field[0].type != _F.TYPE_MESSAGE:
        entry["wraps"] = "items"
    messages[full] = entry
    for nested in m.nested_type:
        if not nested.options.map_entry:
            _add(messages, full, nested)


def _type_of(f: descriptor_pb2.FieldDescriptorProto) -> str:
    if f.type == _F.TYPE_MESSAGE:
        return f.type_name.lstrip(".")
    return _SCALARS[f.type]


def _reachable(messages: dict[str, dict[str, Any]]) -> set[str]:
    """Every message named by a kind's definition (or by apimachinery), and what they refer to."""
    todo = [name for name in messages
            if schema.definition(_definition_name(name)).get("x-kubernetes-group-version-kind")
            or name.startswith("k8s.io.apimachinery.")]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in messages:
            continue
        seen.add(name)
        for field in messages[name]["fields"].values():
            todo.extend(t for t in field[1:] if isinstance(t, str) and t in messages)
    return seen


def _dump(document: dict[str, Any]) -> str:
    """Compact JSON with one kind or message a line, so that a regeneration diffs by message."""
    def compact(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"))

    parts = []
    for key, value in document.items():
        if isinstance(value, dict) and key != "comment":
            inner = ",\n".join(f" {compact(k)}:{compact(v)}" for k, v in value.items())
            parts.append(f"{compact(key)}:{{\n{inner}\n}}")
        else:
            parts.append(f"{compact(key)}:{compact(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubectl", type=Path, default=None, help="the kubectl 1.32 binary to read")
    parser.add_argument("--also", type=Path, action="append", default=None,
                        help="other Go binaries whose descriptors kubectl lacks (default: anthoscli beside kubectl)")
    args = parser.parse_args()
    kubectl = args.kubectl or default_kubectl()
    files = descriptors(kubectl)
    sources = {name: kubectl.name for name in files}
    also = args.also if args.also is not None else [p for p in [kubectl.parent / "anthoscli"] if p.exists()]
    for extra in also:
        for name, fd in descriptors(extra).items():
            if name not in files and "apiextensions" in name:
                files[name] = fd
                sources[name] = extra.name
    document = build(files)
    used = {".".join(name.split(".")[:-1]) for name in document["messages"]}
    document = {
        "comment": "Generated by hack/gen_protobuf_descriptors.py from the descriptors embedded in "
                   f"{kubectl.name} and the {schema.KUBERNETES_VERSION} OpenAPI definitions; do not edit. "
                   "Field: [jsonName, type, flags(r=repeated, n=not nullable, q=required, i=inline)] or "
                   "[jsonName, 'map', flags, keyType, valueType].",
        "sources": {name: src for name, src in sorted(sources.items())
                    if files[name].package in used or any(u.startswith(files[name].package + ".") for u in used)},
        **document,
    }
    OUTPUT.write_text(_dump(document))
    print(f"wrote {len(document['messages'])} messages and {len(document['kinds'])} kinds "
          f"from {len(document['sources'])} files to {OUTPUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
