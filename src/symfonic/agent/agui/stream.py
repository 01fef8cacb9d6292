"""An AG-UI run as Server-Sent Events, raced against the client going away.

The run is closed the moment the client disconnects -- cancelled mid-``await``
(waiting on the model, or on a slow tool) or closed at its ``yield`` -- because
closing it is what runs the turn's shielded cleanup: a claimed pause that
published nothing moves to ``abandoned`` instead of staying ``claimed``. The
disconnect is watched on the ASGI ``receive`` channel for the whole stream, not
only noticed at the next write, since a run waiting on a tool writes nothing
for as long as the tool runs. A comment frame goes out every ``ping_interval``
seconds so proxies do not cut a quiet stream; AG-UI clients read only ``data:``
lines and skip it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import anyio
from ag_ui.core import BaseEvent
from ag_ui.encoder import EventEncoder
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

PING_INTERVAL = 15.0
PING = b": ping\n\n"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class RunEventStream(StreamingResponse):
    """The SSE response of one AG-UI run; closing it closes the run."""

    def __init__(
        self, events: AsyncGenerator[BaseEvent, None], *, ping_interval: float = PING_INTERVAL
    ) -> None:
        encoder = EventEncoder()
        self._events = events
        self._frames = _frames(encoder, events)
        super().__init__(self._frames, headers=HEADERS, media_type=encoder.get_content_type())
        self._ping_interval = ping_interval

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with (
            aclosing(self._events),
            aclosing(self._frames),
            anyio.create_task_group() as tasks,
        ):
            tasks.start_soon(_cancel_on_disconnect, receive, tasks.cancel_scope)
            # A write that fails means the client is gone: closing the run is all that is left.
            with contextlib.suppress(OSError):
                await self._stream(send, tasks)
            tasks.cancel_scope.cancel()

    async def _stream(self, send: Send, tasks: anyio.abc.TaskGroup) -> None:
        lock = anyio.Lock()

        async def body(chunk: bytes, *, more: bool = True) -> None:
            async with lock:
                await send({"type": "http.response.body", "body": chunk, "more_body": more})

        async def ping() -> None:
            while True:
                await anyio.sleep(self._ping_interval)
                await body(PING)

        await send(
            {"type": "http.response.start", "status": self.status_code,
             "headers": self.raw_headers}
        )
        tasks.start_soon(ping)
        async for frame in self._frames:
            await body(frame)
        await body(b"", more=False)


async def _frames(
    encoder: EventEncoder, events: AsyncGenerator[BaseEvent, None]
) -> AsyncGenerator[bytes, None]:
    async for event in events:
        yield encoder.encode(event).encode()


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while True:
        message: dict[str, Any] = dict(await receive())
        if message.get("type") == "http.disconnect":
            scope.cancel()
            return
