"""Runs that run nothing and still finish: the thread's state now, or an answer given elsewhere,
since an AG-UI client clears its interrupts only on `RUN_FINISHED`. Nothing here claims or
answers a pause.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
from ag_ui.core import BaseEvent

from symfonic.agent.agent import SymfonicAgent
from symfonic.core.contracts.errors import PauseAlreadyClaimed
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import PauseRecord
from symfonic.core.contracts.types import Event, PauseState, TurnPausedEvent, asked
from symfonic.server.agui.interrupts import addressed_metadata
from symfonic.server.agui.mapping import RunProjection
from symfonic.server.agui.snapshot import answered_note, thread_messages

CLAIM_WAIT = 30.0
"""Seconds a resume waits for another request's claim on its interrupt to settle."""
POLL = 0.1


async def interrupted(
    agent: SymfonicAgent, paused: TurnPausedEvent, projection: RunProjection, principal: Principal
) -> list[BaseEvent]:
    """``RUN_FINISHED`` with the interrupt a turn just paused at, its metadata saying
    who the pause is addressed to and whether ``principal`` may answer it: read from
    the pause's row, which the turn wrote before it said it paused."""
    row = await agent.store.get_pause(paused.pause_id)
    addressed = None if row is None else addressed_metadata(row, principal.may_answer(row))
    return projection.interrupt(paused, addressed)


async def projected(
    agent: SymfonicAgent, symfonic_event: Event, projection: RunProjection, principal: Principal
) -> list[BaseEvent]:
    """One symfonic event as AG-UI events; an interrupt names its pause's audience."""
    if isinstance(symfonic_event, TurnPausedEvent) and not projection.closed:
        return await interrupted(agent, symfonic_event, projection, principal)
    return projection.project(symfonic_event)


async def closing(
    agent: SymfonicAgent, session_id: str, projection: RunProjection, principal: Principal
) -> list[BaseEvent]:
    """The run's end: the thread's open interrupt again if it has one, else success."""
    paused = await agent.store.open_pause(session_id)
    if paused is not None and (
        paused.state is PauseState.CLAIMED or paused.answerable(agent.clock())
    ):
        event = TurnPausedEvent(**asked(paused), pause_token=agent.token_for(paused))
        return projection.interrupt(event, addressed_metadata(paused, principal.may_answer(paused)))
    return projection.succeed()


async def thread_state(
    agent: SymfonicAgent,
    session_id: str,
    projection: RunProjection,
    principal: Principal,
    note: str | None = None,
) -> list[BaseEvent]:
    """``RUN_STARTED``, the thread's messages, ``note`` said if any, and its open
    interrupt (or success)."""
    messages = await thread_messages(agent.store, session_id)
    said = [] if note is None else projection.say(note)
    return [
        *projection.start(),
        *projection.snapshot(messages),
        *said,
        *await closing(agent, session_id, projection, principal),
    ]


async def answered_elsewhere(
    agent: SymfonicAgent, pause: PauseRecord, projection: RunProjection, principal: Principal
) -> list[BaseEvent]:
    """The published outcome of a pause settled with another answer, and who gave it."""
    row = await agent.store.get_pause(pause.pause_id) or pause
    messages = await thread_messages(agent.store, row.session_id)
    return [
        *projection.start(),
        *projection.snapshot(messages),
        *projection.say(answered_note(row)),
        *await closing(agent, row.session_id, projection, principal),
    ]


async def claim_settled(
    agent: SymfonicAgent,
    pause_id: str,
    wait: float,
    clock: Callable[[], float] = anyio.current_time,
) -> PauseRecord | None:
    """The pause once no request holds a claim on it; past ``wait`` seconds, refuse."""
    deadline = clock() + wait
    while True:
        row = await agent.store.get_pause(pause_id)
        if row is None or row.state is not PauseState.CLAIMED:
            return row
        if clock() >= deadline:
            raise PauseAlreadyClaimed(
                f"another answer to this interrupt was still being carried out after "
                f"{wait:g} seconds; send the same answer again shortly to get its outcome",
                pause_id=pause_id,
            )
        await anyio.sleep(POLL)
