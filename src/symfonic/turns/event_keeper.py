"""A run's events, written by a task of their own so a slow write holds back only it; events are
gathered for ``GATHER_SECONDS`` (text deltas up to ``FLUSH_SECONDS``) into one write, and each
write hands on what it kept, numbered as the store did.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from symfonic.core.contracts.run_events import RunEvent, RunEventLog, coalesced
from symfonic.core.contracts.types import Event, TextDeltaEvent, TurnPausedEvent

logger = logging.getLogger("symfonic")

FLUSH_SECONDS = 0.25
# A burst of events (a tool call and its result, a short answer) is one transaction;
# a follower hears of each at most this much later.
GATHER_SECONDS = 0.005

Kept = Callable[[list[RunEvent]], None]


def stored(event: Event) -> Event:
    """The event as it is kept: a paused turn's without its token."""
    if isinstance(event, TurnPausedEvent):
        return event.model_copy(update={"pause_token": ""})
    return event


async def keep_events(
    store: RunEventLog,
    run_id: str,
    receive: MemoryObjectReceiveStream[Event],
    kept: Kept,
    unkept: list[Event],
    written: int = 0,
) -> None:
    """Write the events received, gathered as the module says; hand each write's rows
    to ``kept``, numbered after the ``written`` rows the run has. What is still
    gathered when the stream ends goes to ``unkept``: the run's end keeps it."""
    pending: list[Event] = []
    deadline = math.inf
    async with receive:
        while True:
            try:
                event = await _next(receive, deadline)
            except anyio.EndOfStream:
                unkept += pending
                return
            if event is not None:
                pending.append(stored(event))
                wait = FLUSH_SECONDS if isinstance(event, TextDeltaEvent) else GATHER_SECONDS
                deadline = min(deadline, anyio.current_time() + wait)
                continue
            rows = await _write(store, run_id, pending, written)
            written += len(rows)
            kept(rows)
            pending, deadline = [], math.inf


async def _next(receive: MemoryObjectReceiveStream[Event], deadline: float) -> Event | None:
    """The next event, or ``None`` once ``deadline`` passes without one."""
    with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
        return await receive.receive()
    return None


async def _write(
    store: RunEventLog, run_id: str, events: list[Event], written: int
) -> list[RunEvent]:
    """The rows the store kept of ``events``: a prefix of them, coalesced, numbered
    after the ``written`` rows before (only this task appends to the run)."""
    if not events:
        return []
    try:
        count = await store.append_run_events(run_id, events)
    except Exception as error:
        # The turn goes on: its end and outcome are still recorded.
        logger.warning("a background run's events could not be kept: %s", error)
        return []
    return [RunEvent(written + n, e) for n, e in enumerate(coalesced(events)[:count], start=1)]
