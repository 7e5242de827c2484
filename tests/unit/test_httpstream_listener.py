"""The listener under the kubelet API and metrics-server: a task per connection, all ended by close()."""

from __future__ import annotations

import asyncio
import logging

import pytest

from machinery.httpstream.listener import Listener

LOOPBACK = "127.0.0.1"


async def test_each_connection_is_served_and_closed_when_the_handler_returns() -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.readline())
        await writer.drain()

    listener = Listener(echo)
    port = await listener.start(LOOPBACK, 0)
    try:
        reader, writer = await asyncio.open_connection(LOOPBACK, port)
        writer.write(b"hello\n")
        await writer.drain()
        # The listener closes the connection once the handler is done: the client reads to EOF.
        assert await asyncio.wait_for(reader.read(), 5) == b"hello\n"
        writer.close()
        await writer.wait_closed()
        assert listener.open_connections == 0
    finally:
        await listener.close()


async def test_close_cancels_the_connections_still_open_and_waits_for_them() -> None:
    entered, ended = asyncio.Event(), asyncio.Event()

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        entered.set()
        try:
            await reader.read()  # a log follower or an exec session: open until the peer or close() ends it
        finally:
            ended.set()

    listener = Listener(hold)
    port = await listener.start(LOOPBACK, 0)
    reader, writer = await asyncio.open_connection(LOOPBACK, port)
    await asyncio.wait_for(entered.wait(), 5)
    assert listener.open_connections == 1
    await asyncio.wait_for(listener.close(), 5)
    assert ended.is_set() and listener.open_connections == 0
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()
    await writer.wait_closed()


async def test_closing_an_open_connection_logs_no_error(caplog: pytest.LogCaptureFixture) -> None:
    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    listener = Listener(hold)
    port = await listener.start(LOOPBACK, 0)
    reader, writer = await asyncio.open_connection(LOOPBACK, port)
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        while listener.open_connections == 0:
            await asyncio.sleep(0.01)
        await asyncio.wait_for(listener.close(), 5)
        assert await asyncio.wait_for(reader.read(), 5) == b""
        await asyncio.sleep(0.05)  # the loop's turn for the streams' callbacks on the ended task
    writer.close()
    await writer.wait_closed()
    # Python 3.11's StreamReaderProtocol asks a finished connection task for its exception, which raises
    # for a cancelled one: "Exception in callback ...", with a traceback, on every Ctrl-C of kubesim up.
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
