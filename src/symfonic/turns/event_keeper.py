"""Keeping a run's events: written by a task of their own, text deltas gathered.

A run's events are kept beside the turn, never in its way: a slow write holds
back only this task, and a write that fails is logged and the turn goes on
(its end and outcome are recorded with the run, not here). Text deltas wait up
to ``FLUSH_SECONDS`` so a long streamed answer is a few rows a second, not a row
a token; any other event is written at once with what waits before it. What is
kept is :func:`stored`: a paused turn's event without its token, which the
stream that replays it mints again for whoever may answer.
"""

from __future__ import annotations

import logging
import math

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from symfonic.core.contracts.run_events import RunEventLog
from symfonic.core.contracts.types import Event, TextDeltaEvent, TurnPausedEvent

logger = logging.getLogger("symfonic")

FLUSH_SECONDS = 0.25


def stored(event: Event) -> Event:
    """The event as it is kept: a paused turn's without its token."""
    if isinstance(event, TurnPausedEvent):
        return event.model_copy(update={"pause_token": ""})
    return event


async def keep_events(
    store: RunEventLog, run_id: str, receive: MemoryObjectReceiveStream[Event]
) -> None:
    """Write the events received, deltas gathered for up to ``FLUSH_SECONDS``."""
    pending: list[Event] = []
    deadline = math.inf
    async with receive:
        while True:
            try:
                event = await _next(receive, deadline)
            except anyio.EndOfStream:
                await _write(store, run_id, pending)
                return
            if event is not None:
                pending.append(stored(event))
                if isinstance(event, TextDeltaEvent):
                    if len(pending) == 1:
                        deadline = anyio.current_time() + FLUSH_SECONDS
                    continue
            await _write(store, run_id, pending)
            pending, deadline = [], math.inf


async def _next(receive: MemoryObjectReceiveStream[Event], deadline: float) -> Event | None:
    """The next event, or ``None`` once ``deadline`` passes without one."""
    with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
        return await receive.receive()
    return None


async def _write(store: RunEventLog, run_id: str, events: list[Event]) -> None:
    if not events:
        return
    try:
        await store.append_run_events(run_id, events)
    except Exception as error:
        # The turn goes on: its end and outcome are still recorded.
        logger.warning("a background run's events could not be kept: %s", error)
