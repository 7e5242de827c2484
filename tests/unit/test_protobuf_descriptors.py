"""The committed protobuf field table is what hack/gen_protobuf_descriptors.py makes from the installed kubectl.

It guards the data against hand edits and against a generator that no longer
reproduces it; it needs the kubectl binaries (and anthoscli, for apiextensions)
that the data was read from, and is skipped where they are not installed.
"""

from __future__ import annotations

import importlib.util
import json
from importlib import resources
from pathlib import Path
from types import ModuleType

import pytest

from tests.kubectl import KUBECTL_DIR

ROOT = Path(__file__).resolve().parent.parent.parent


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_protobuf_descriptors",
                                                  ROOT / "hack" / "gen_protobuf_descriptors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_table_is_reproduced_from_the_binaries() -> None:
    committed = json.loads((resources.files("machinery.api") / "protobuf_messages.json").read_bytes())
    sources = {KUBECTL_DIR / name for name in committed["sources"].values()}
    missing = [str(p) for p in sources if not p.exists()]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    gen = _generator()
    files: dict[str, object] = {}
    for binary in sorted(sources, key=lambda p: p.name != "kubectl.1.32"):
        for name, fd in gen.descriptors(binary).items():
            if name in committed["sources"] and committed["sources"][name] == binary.name:
                files[name] = fd
    assert sorted(files) == sorted(committed["sources"])
    built = gen.build(files)
    assert built["kinds"] == committed["kinds"]
    assert built["messages"] == committed["messages"]
