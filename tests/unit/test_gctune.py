"""Freezing survivors of full collections, and still freeing cycles that died after being frozen.

Run in a child process: the collector's state is the whole process's.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import gc, weakref
    from machinery import gctune

    gctune.MIN_GROWTH = 2_000
    gctune.freeze_survivors()

    class Connection:
        pass

    def connection():
        # A protocol and its transport refer to each other, as asyncio's and uvicorn's do.
        protocol, transport = Connection(), Connection()
        protocol.transport, transport.protocol = transport, protocol
        return protocol

    open_ = [connection() for _ in range(500)]
    refs = [weakref.ref(c) for c in open_]
    gc.collect()                    # a full collection while they are open: frozen with the survivors
    del open_                       # closed: garbage, but frozen
    gc.collect()
    assert sum(r() is not None for r in refs) == 500, "frozen cycles are out of the collector's reach"
    cache = [Connection() for _ in range(20_000)]   # the caches grow: the frozen set with them
    for _ in range(3):
        gc.collect()
    print(sum(r() is not None for r in refs), gc.get_freeze_count() >= len(cache))
""")


def test_cycles_that_die_after_being_frozen_are_freed_once_the_frozen_set_grows() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True)
    # All 500 dead connections freed; the live cache frozen again.
    assert out.stdout.split() == ["0", "True"], out.stderr
