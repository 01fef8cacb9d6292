"""From a stream of events to what a caller gets: the first event pulled, error frames and
``TurnResult``."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Generic, TypeVar

from symfonic.core.contracts.errors import (
    PauseAbandoned,
    RevisionConflict,
    StoreCannotWrite,
    StoreUnavailable,
    SymfonicError,
    UnusableFinal,
)
from symfonic.core.contracts.types import (
    ApprovalRecordedEvent,
    ErrorEvent,
    Event,
    PauseInfo,
    ResponseCompleteEvent,
    TurnError,
    TurnPausedEvent,
    TurnResult,
    TurnStartedEvent,
    asked,
)

logger = logging.getLogger("symfonic")

E = TypeVar("E")


async def first_event(events: AsyncGenerator[E, None]) -> E:
    """Pull a turn's first event: its refusals raise here, and the stream is closed."""
    try:
        return await anext(events)
    except StopAsyncIteration:
        raise RuntimeError("a turn's stream ended before its first event") from None
    except BaseException:
        await events.aclose()
        raise


class PrimedTurn(Generic[E]):
    """A turn (or an AG-UI run) whose first event has been pulled, so every refusal has raised
    before a response exists and can be a plain JSON error with its own status; ``aclose``
    ends the turn."""

    def __init__(self, first: E, rest: AsyncGenerator[E, None]) -> None:
        self.first = first
        self._rest = rest

    @classmethod
    async def start(cls, events: AsyncGenerator[E, None]) -> PrimedTurn[E]:
        """Pull the first event; refusals raise here and the stream is closed."""
        return cls(await first_event(events), events)

    async def __aiter__(self) -> AsyncGenerator[E, None]:
        yield self.first
        async for event in self._rest:
            yield event

    async def aclose(self) -> None:
        await self._rest.aclose()


def error_event(error: Exception) -> ErrorEvent:
    """The frame that ends a stream which failed after it started."""
    if isinstance(error, UnusableFinal):
        return ErrorEvent(code=error.error_code, message=str(error))
    if isinstance(error, RevisionConflict):
        return ErrorEvent(code="revision_conflict", message=str(error))
    if isinstance(error, StoreCannotWrite):
        logger.warning("a turn could not be recorded, the store cannot write: %s", error)
        return ErrorEvent(
            code=error.code,
            message=f"the store cannot write ({error.reason}); nothing was published",
        )
    if isinstance(error, StoreUnavailable):
        # The driver's words are for the operator: they go to the log only.
        logger.warning("a turn could not be recorded, the store is out of reach: %s", error)
        return ErrorEvent(
            code="internal",
            message="the store could not be reached in time to record this turn; "
            "nothing was published",
        )
    if isinstance(error, PauseAbandoned):
        return ErrorEvent(code="internal", message=str(error))
    if isinstance(error, SymfonicError) and error.code != "internal":
        return ErrorEvent(code=error.code, message=str(error))
    logger.error("a turn failed unexpectedly", exc_info=error)
    return ErrorEvent(code="internal", message="the turn failed; see the server log")


def pause_info(event: TurnPausedEvent) -> PauseInfo:
    return PauseInfo(**asked(event), token=event.pause_token)


async def collect(stream: AsyncGenerator[Event, None]) -> TurnResult:
    """Drain a turn's stream into its result, then close it; request errors propagate."""
    events: list[Event] = []
    session_id, revision = "", 0
    async with aclosing(stream) as turn:
        async for event in turn:
            events.append(event)
            # An approval counted toward a quorum ends a resume that started no turn.
            if isinstance(event, TurnStartedEvent | ApprovalRecordedEvent):
                session_id, revision = event.session_id, event.base_revision
    final = events[-1] if events else None
    if isinstance(final, ResponseCompleteEvent):
        return TurnResult(
            "complete",
            session_id,
            final.revision if final.revision is not None else revision,
            answer=final.answer,
            events=tuple(events),
        )
    if isinstance(final, TurnPausedEvent):
        return TurnResult(
            "paused", session_id, revision, pause=pause_info(final), events=tuple(events)
        )
    error = (
        final
        if isinstance(final, ErrorEvent)
        else ErrorEvent(code="internal", message="the stream ended without an outcome")
    )
    return TurnResult(
        "failed",
        session_id,
        revision,
        error=TurnError(error.code, error.message),
        events=tuple(events),
    )
