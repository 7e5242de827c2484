"""Write ``apiserver/gnostic_openapiv2.json``: the protobuf messages of an OpenAPI v2 document, as data.

kubectl reads ``/openapi/v2`` as protobuf only: client-go's discovery asks for
``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` and unmarshals
the body as gnostic's ``openapi.v2.Document`` whatever the Content-Type says.
kube-apiserver writes that message with gnostic (``openapi_v2.ParseDocument``
then ``proto.Marshal``); kubesim writes it with the ``protobuf`` package from
PyPI (:mod:`apiserver.gnostic`), driven by gnostic's own message definitions
rather than by hand-typed field numbers.

Those definitions ship inside every kubectl binary: protoc-gen-go keeps each
``.proto`` file's serialized ``FileDescriptorProto`` (its "raw descriptor") as
one byte string, which the linker keeps. This script finds the one named
``openapiv2/OpenAPIv2.proto`` in kubectl 1.32, reads it up to its last field
(``syntax``, field 12, which protoc writes last), checks that it parses and
describes ``openapi.v2.Document``, and writes it in protobuf's JSON form.

Run from the repository root with the project's virtualenv::

    .venv/bin/python hack/gen_gnostic_descriptor.py [--kubectl PATH]

The output is committed; the APIServer reads it when it first serves the
protobuf form of ``/openapi/v2``.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from google.protobuf import descriptor_pb2, json_format

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "apiserver" / "gnostic_openapiv2.json"

#: A FileDescriptorProto starts with its name (field 1, length-delimited): this file's name.
_START = b"\n\x19openapiv2/OpenAPIv2.proto"
#: FileDescriptorProto's ``syntax`` field: the last one protoc writes for a proto3 file.
_SYNTAX_FIELD = 12


def default_kubectl() -> Path:
    found = shutil.which("kubectl")
    if found is None:
        raise SystemExit("kubectl is not on the PATH; pass --kubectl")
    return Path(found).resolve().parent / "kubectl.1.32"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def raw_descriptor(binary: Path) -> bytes:
    """The serialized ``openapiv2/OpenAPIv2.proto`` descriptor embedded in a Go binary."""
    data = binary.read_bytes()
    start = data.find(_START)
    if start < 0:
        raise SystemExit(f"{binary} embeds no openapiv2/OpenAPIv2.proto descriptor")
    pos = start
    # Every top-level field of a FileDescriptorProto is length-delimited; walk them to the last one.
    while True:
        tag, body = _varint(data, pos)
        if tag & 7 != 2:
            raise SystemExit(f"unexpected wire type {tag & 7} at offset {pos - start} of the descriptor")
        length, body = _varint(data, body)
        pos = body + length
        if tag >> 3 == _SYNTAX_FIELD:
            return data[start:pos]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubectl", type=Path, default=None, help="the kubectl binary to read (default: kubectl.1.32)")
    args = parser.parse_args()
    binary = args.kubectl or default_kubectl()
    fd = descriptor_pb2.FileDescriptorProto.FromString(raw_descriptor(binary))
    if fd.package != "openapi.v2" or "Document" not in {m.name for m in fd.message_type}:
        raise SystemExit(f"the descriptor found in {binary} does not describe openapi.v2.Document")
    # Source locations and options are not needed to encode messages.
    fd.ClearField("source_code_info")
    fd.ClearField("options")
    out = json_format.MessageToDict(fd, preserving_proto_field_name=True)
    OUTPUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUTPUT.relative_to(ROOT)}: {len(fd.message_type)} messages from {binary}")


if __name__ == "__main__":
    main()
