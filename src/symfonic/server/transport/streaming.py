"""Writing a stream of frames while watching for the client to go away on the ASGI `receive`
channel, so a turn's cleanup runs at once, not when the garbage collector finds it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import suppress
from typing import Any

import anyio
from starlette.types import Receive, Send

PING_INTERVAL = 15.0
"""Seconds between keep-alive comments: well under the idle timeout of common proxies."""


async def stream_until_disconnect(
    send: Send,
    receive: Receive,
    *,
    status: int,
    headers: Sequence[tuple[bytes, bytes]],
    frames: AsyncIterator[bytes],
    ping: bytes,
    ping_interval: float,
) -> None:
    """Send ``frames`` as one response body, until they end or the client leaves."""
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_cancel_on_disconnect, receive, tasks.cancel_scope)
        lock = anyio.Lock()

        async def body(chunk: bytes, *, more: bool = True) -> None:
            async with lock:
                await send({"type": "http.response.body", "body": chunk, "more_body": more})

        async def keep_alive() -> None:
            while True:
                await anyio.sleep(ping_interval)
                await body(ping)

        # OSError: the server could not write, so the client is gone; closing
        # the caller's generator is all that is left to do.
        with suppress(OSError):
            await send({"type": "http.response.start", "status": status, "headers": headers})
            tasks.start_soon(keep_alive)
            async for frame in frames:
                await body(frame)
            await body(b"", more=False)
        tasks.cancel_scope.cancel()


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while True:
        message: dict[str, Any] = dict(await receive())
        if message.get("type") == "http.disconnect":
            scope.cancel()
            return
