"""A started turn as Server-Sent Events, raced against the client going away.

The response owns the turn: a disconnect or shutdown closes its generator at once, which
runs its shielded cleanup.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Protocol

from fastapi.sse import KEEPALIVE_COMMENT, EventSourceResponse, ServerSentEvent, format_sse_event
from starlette.types import Receive, Scope, Send

from symfonic.core.contracts.run_events import RunEvent
from symfonic.core.contracts.types import ErrorEvent, Event, TurnPausedEvent
from symfonic.server.transport.stream_shares import StreamSlot
from symfonic.server.transport.streaming import PING_INTERVAL, stream_until_disconnect
from symfonic.turns.outcomes import PrimedTurn

logger = logging.getLogger("symfonic.http")
TOKEN = "token"


def wire_data(event: Event) -> str:
    """An event's ``data:`` JSON. A pause's token is ``token``, as everywhere else in the
    API; ``pause_token`` beside it is the same value, deprecated, kept for one release."""
    if not isinstance(event, TurnPausedEvent):
        return event.model_dump_json()
    body = event.model_dump(mode="json")
    body[TOKEN] = event.pause_token
    return json.dumps(body, separators=(",", ":"))


def encode(seq: int, event: Event) -> bytes:
    """One frame: ``event:`` the type, ``data:`` the JSON, ``id:`` its sequence number."""
    frame = ServerSentEvent(event=event.type, raw_data=wire_data(event), id=str(seq))
    return format_sse_event(data_str=frame.raw_data, event=frame.event, id=frame.id)


class Closable(Protocol):
    async def aclose(self) -> None: ...


class FrameStream(EventSourceResponse):
    """An SSE response that owns ``source``: its frames go out, with keep-alive
    comments, until they end or the client leaves, and ``source`` is closed then.
    ``slot``, the stream's place in its principal's share, is released at the end."""

    def __init__(
        self,
        source: Closable,
        *,
        slot: StreamSlot | None = None,
        ping_interval: float = PING_INTERVAL,
    ) -> None:
        # The body comes from ``_frames`` in __call__, never from StreamingResponse.
        super().__init__(
            content=(), headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        )
        self._source = source
        self._slot = slot
        self._ping_interval = ping_interval

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with aclosing(self._source), aclosing(self._frames()) as frames:
                await stream_until_disconnect(
                    send,
                    receive,
                    status=self.status_code,
                    headers=self.raw_headers,
                    frames=frames,
                    ping=KEEPALIVE_COMMENT,
                    ping_interval=self._ping_interval,
                )
        finally:
            if self._slot is not None:
                self._slot.release()

    def _frames(self) -> AsyncGenerator[bytes, None]:
        raise NotImplementedError


class TurnEventStream(FrameStream):
    """The SSE response of one started turn; closing it closes the turn."""

    def __init__(
        self,
        turn: PrimedTurn[Event],
        *,
        slot: StreamSlot | None = None,
        ping_interval: float = PING_INTERVAL,
    ) -> None:
        super().__init__(turn, slot=slot, ping_interval=ping_interval)
        self._turn = turn

    async def _frames(self) -> AsyncGenerator[bytes, None]:
        seq = 0
        try:
            async for event in self._turn:
                seq += 1
                yield encode(seq, event)
        except Exception as error:  # the turn broke its contract; still end the stream well
            logger.error("a turn's stream failed after it started", exc_info=error)
            failed = ErrorEvent(code="internal", message="the turn failed; see the server log")
            yield encode(seq + 1, failed)


class RunEventStream(FrameStream):
    """A run's kept events as SSE, each with its number in the run as ``id``: what a
    client sends back as ``Last-Event-ID`` to go on after it."""

    def __init__(
        self,
        events: AsyncGenerator[RunEvent, None],
        *,
        slot: StreamSlot | None = None,
        ping_interval: float = PING_INTERVAL,
    ) -> None:
        super().__init__(events, slot=slot, ping_interval=ping_interval)
        self._events = events

    async def _frames(self) -> AsyncGenerator[bytes, None]:
        async for kept in self._events:
            yield encode(kept.position, kept.event)
