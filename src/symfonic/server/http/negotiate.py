"""What a started turn becomes: SSE frames, or one JSON outcome for `Accept: application/json`.

The turn starts first, so its refusals are JSON errors, never a stream.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.types import ApprovalRecordedEvent, Event
from symfonic.server.http.schemas import TurnOutcome
from symfonic.server.http.sse import TurnEventStream
from symfonic.server.transport.stream_shares import StreamShares
from symfonic.turns.outcomes import PrimedTurn, collect


def wants_json(request: Request) -> bool:
    """SSE unless the client asks for JSON and not for an event stream."""
    accept = request.headers.get("accept", "").lower()
    return "application/json" in accept and "text/event-stream" not in accept


async def respond(
    request: Request,
    events: AsyncGenerator[Event, None],
    shares: StreamShares,
    principal: Principal,
) -> Response:
    """Start the turn, then answer with its SSE stream or its JSON outcome.

    An approval counted toward a pause that needs several started no turn: it
    is answered 202 with the outcome as JSON (the pause, where its vote stands),
    whichever the client asked for, since there is no stream to send.
    """
    if wants_json(request):
        turn = await PrimedTurn.start(events)
    else:
        slot = shares.acquire(principal, request.scope, idle=False)
        try:
            turn = await PrimedTurn.start(events)
            if not isinstance(turn.first, ApprovalRecordedEvent):
                return TurnEventStream(turn, slot=slot)
        except BaseException:
            slot.release()
            raise
        slot.release()
    # The JSON variant runs the turn to its end even if the client goes away:
    # its outcome is then recorded, and an identical resume replays it.
    async with aclosing(turn):
        result = await collect(turn.__aiter__())
    status = 202 if isinstance(turn.first, ApprovalRecordedEvent) else 200
    return JSONResponse(TurnOutcome.of(result).model_dump(mode="json"), status_code=status)
