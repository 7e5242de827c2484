"""A list's answer: one body, or for a long list the same bytes in pieces, the event loop free between them."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import orjson
from starlette.responses import StreamingResponse

from apiserver.endpoints.responses import LIST_PIECE_ITEMS, list_body, list_response
from apiserver.storage.objects import Entry

RESOURCE: Any = SimpleNamespace(info=SimpleNamespace(list_kind="ConfigMapList", api_version="v1"), converter=None)
META = {"resourceVersion": "42", "continue": "abc"}


def entries(n: int) -> list[Entry]:
    return [Entry(f"/registry/configmaps/ns/c{i}", orjson.dumps({"metadata": {"name": f"c{i}"}}), i + 1)
            for i in range(n)]


def collect(response: Any) -> tuple[bytes, int]:
    """The streamed body, and how many times another task ran while it was produced."""
    turns = 0

    async def other() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    async def run() -> bytes:
        task = asyncio.create_task(other())
        try:
            return b"".join([piece async for piece in response.body_iterator])
        finally:
            task.cancel()

    return asyncio.run(run()), turns


def test_a_short_list_is_one_body() -> None:
    items = entries(3)
    response = list_response(RESOURCE, items, META)
    assert not isinstance(response, StreamingResponse)
    assert response.body == list_body(RESOURCE, [e.raw for e in items], META)
    assert orjson.loads(response.body)["items"][2]["metadata"]["name"] == "c2"


def test_a_long_list_is_the_same_bytes_in_pieces_with_the_loop_free_between_them() -> None:
    for n in (LIST_PIECE_ITEMS + 1, 2 * LIST_PIECE_ITEMS, 2 * LIST_PIECE_ITEMS + 7):
        items = entries(n)
        response = list_response(RESOURCE, items, META)
        assert isinstance(response, StreamingResponse)
        body, turns = collect(response)
        assert body == list_body(RESOURCE, [e.raw for e in items], META)
        doc = orjson.loads(body)
        assert doc["metadata"] == META and len(doc["items"]) == n
        # Other tasks ran between the pieces.
        assert turns >= n // LIST_PIECE_ITEMS
