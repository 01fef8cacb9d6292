"""An AG-UI run as Server-Sent Events, raced against the client going away; closing it stops a
kept run's listening, or runs an in-request turn's cleanup.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

from ag_ui.core import BaseEvent
from ag_ui.encoder import EventEncoder
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from symfonic.server.transport.stream_shares import StreamSlot
from symfonic.server.transport.streaming import PING_INTERVAL, stream_until_disconnect
from symfonic.turns.outcomes import PrimedTurn

PING = b": ping\n\n"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class AguiEventStream(StreamingResponse):
    """The SSE response of one AG-UI run; closing it closes the run."""

    def __init__(
        self,
        run: PrimedTurn[BaseEvent],
        *,
        slot: StreamSlot | None = None,
        ping_interval: float = PING_INTERVAL,
    ) -> None:
        encoder = EventEncoder()
        self._events = run
        self._slot = slot
        self._frames = _frames(encoder, run)
        super().__init__(self._frames, headers=HEADERS, media_type=encoder.get_content_type())
        self._ping_interval = ping_interval

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with aclosing(self._events), aclosing(self._frames):
                await stream_until_disconnect(
                    send,
                    receive,
                    status=self.status_code,
                    headers=self.raw_headers,
                    frames=self._frames,
                    ping=PING,
                    ping_interval=self._ping_interval,
                )
        finally:
            if self._slot is not None:
                self._slot.release()


async def _frames(
    encoder: EventEncoder, events: PrimedTurn[BaseEvent]
) -> AsyncGenerator[bytes, None]:
    async for event in events:
        yield encoder.encode(event).encode()
