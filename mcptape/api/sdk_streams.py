"""A replay engine serving the official SDK's ClientSession through memory streams: no process, no socket.

Owns the in-memory transport of `mcptape.replay(tape, transport="memory")` and `mcptape.connect`:
the SDK's own stream pair (mcp.shared.memory), each client message written as the SDK's stdio
transport writes it (`model_dump_json(by_alias=True, exclude_unset=True)`, so the engine matches
the same text a stdio replay gets), each line the engine sends parsed as that transport parses
one (a line that is not JSON-RPC, as a `malformed` fault sends, reaches the session as the
exception the SDK would hand it). What to answer is the engine's (replay/engine.py, lab.py): it
runs in a worker thread, since a paced answer sleeps and a live tool waits on the live server.
One message at a time, as stdio play answers. Needs the official SDK (`pip install mcp`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.to_thread
from mcp import types
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import SessionMessage

from mcptape.replay.lab import LabEngine

Streams = tuple[Any, Any]  # the SDK's (read, write) pair a ClientSession takes


@contextlib.asynccontextmanager
async def memory_streams(engine: LabEngine) -> AsyncIterator[Streams]:
    """The client's ends of a stream pair `engine` answers on, until the block ends or the engine
    closes the connection (the recorded server exited, a `close` fault)."""
    def parsed(line: str) -> SessionMessage | Exception:
        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        except ValueError as e:  # as the SDK's stdio transport hands a line it cannot parse
            return e

    async def serve(read: Any, write: Any) -> None:
        async with write:
            for line in engine.pending_startup():
                await write.send(parsed(line))
            async for item in read:
                if isinstance(item, Exception):
                    continue
                line = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                for out in await anyio.to_thread.run_sync(engine.handle, line):
                    await write.send(parsed(out))
                if engine.closed:
                    return  # the client sees the connection end, as when the recorded server exited

    async with create_client_server_memory_streams() as (client, server), anyio.create_task_group() as tasks:
        tasks.start_soon(serve, *server)
        try:
            yield client
        finally:
            tasks.cancel_scope.cancel()
