"""A started turn as Server-Sent Events, raced against the client going away.

By the time this response exists the turn has begun (its first event was
pulled while a refusal could still be a JSON error), so from here the response
owns the turn and must end it one way or another. Two things can end it early:
the client disconnecting, and the server shutting down. Either way the turn's
generator is closed *now* -- cancelled mid-``await`` or closed at its ``yield``
-- which is what runs its shielded cleanup: a claimed pause that published
nothing moves to ``abandoned`` and a first turn's run marker is cleared.

The disconnect is watched on the ASGI ``receive`` channel for the whole stream,
as Starlette's ``StreamingResponse`` does under ASGI < 2.4, but regardless of
the spec version the server reports: under 2.4 Starlette would notice only at
the next write, and a turn waiting on a slow tool writes nothing for as long as
the tool runs. A keep-alive comment goes out every ``ping_interval`` seconds so
proxies do not cut a quiet stream.
"""

from __future__ import annotations

import logging
from contextlib import aclosing, suppress
from typing import Any

import anyio
from anyio import CancelScope
from fastapi.sse import KEEPALIVE_COMMENT, EventSourceResponse, ServerSentEvent, format_sse_event
from starlette.types import Receive, Scope, Send

from symfonic.agent.fastapi.started import StartedTurn
from symfonic.core.contracts.types import ErrorEvent, Event

logger = logging.getLogger("symfonic.http")

PING_INTERVAL = 15.0


def encode(seq: int, event: Event) -> bytes:
    """One frame: ``event:`` the type, ``data:`` the JSON, ``id:`` its sequence number."""
    frame = ServerSentEvent(event=event.type, raw_data=event.model_dump_json(), id=str(seq))
    return format_sse_event(data_str=frame.raw_data, event=frame.event, id=frame.id)


class TurnEventStream(EventSourceResponse):
    """The SSE response of one started turn; closing it closes the turn."""

    def __init__(self, turn: StartedTurn, *, ping_interval: float = PING_INTERVAL) -> None:
        # The body comes from the turn in __call__, never from StreamingResponse.
        super().__init__(
            content=(), headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        )
        self._turn = turn
        self._ping_interval = ping_interval

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with aclosing(self._turn), anyio.create_task_group() as tasks:
            tasks.start_soon(_cancel_on_disconnect, receive, tasks.cancel_scope)
            # OSError: the server could not write, so the client is gone; closing
            # the turn (aclosing above) is all that is left to do.
            with suppress(OSError):
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
                await body(KEEPALIVE_COMMENT)

        await send(
            {"type": "http.response.start", "status": self.status_code,
             "headers": self.raw_headers}
        )
        tasks.start_soon(ping)
        seq = 0
        try:
            async for event in self._turn:
                seq += 1
                await body(encode(seq, event))
        except Exception as error:  # the turn broke its contract; still end the stream well
            logger.error("a turn's stream failed after it started", exc_info=error)
            failed = ErrorEvent(code="internal", message="the turn failed; see the server log")
            await body(encode(seq + 1, failed))
        await body(b"", more=False)


async def _cancel_on_disconnect(receive: Receive, scope: CancelScope) -> None:
    while True:
        message: dict[str, Any] = dict(await receive())
        if message.get("type") == "http.disconnect":
            scope.cancel()
            return
