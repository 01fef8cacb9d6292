"""An AG-UI run that joins the turn its thread is running, instead of being refused: its kept
events, then live, as an AG-UI run of its own; the request's own message is not run.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

import anyio
from ag_ui.core import BaseEvent

from symfonic.agent.agent import SymfonicAgent
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import SessionRecord
from symfonic.core.contracts.types import (
    Event,
    ResponseCompleteEvent,
    TurnPausedEvent,
    TurnStartedEvent,
)
from symfonic.server.agui.mapping import RunProjection
from symfonic.server.agui.snapshot import thread_messages
from symfonic.server.agui.state import projected
from symfonic.server.agui.threads import Join, running
from symfonic.server.service.runs import WorkerRuns

BUSY_WAIT = 1.0
"""Seconds a run that found its thread busy looks for the busy turn's kept run."""
POLL = 0.05


async def joined(
    plan: Join, principal: Principal, projection: RunProjection, runs: WorkerRuns
) -> AsyncGenerator[BaseEvent, None]:
    """The AG-UI events of the turn ``plan`` joins, from its first to its end."""
    agent, session_id = plan.agent, plan.session.session_id
    projection.joined = True
    if plan.run.pause_id is not None:
        # A resume: the answered call was announced by the run that paused.
        pause = await agent.store.get_pause(plan.run.pause_id)
        projection.answered_tool_call_id = None if pause is None else pause.tool_call_id
    restoring = not projection.run_input.messages
    async with aclosing(runs.follow(plan.run, principal)) as kept:
        async for one in kept:
            event = await _with_token(agent, one.event)
            if isinstance(event, ResponseCompleteEvent | TurnPausedEvent):
                for shown in projection.snapshot(await thread_messages(agent.store, session_id)):
                    yield shown
            for shown in await projected(agent, event, projection, principal):
                yield shown
            if isinstance(event, TurnStartedEvent) and restoring:
                for shown in projection.snapshot(await thread_messages(agent.store, session_id)):
                    yield shown


async def busy_join(
    agent: SymfonicAgent, session: SessionRecord, wait: float = BUSY_WAIT
) -> Join | None:
    """The turn a thread was found busy with, to join; ``None`` when it keeps no events.

    A turn holds its thread a moment before its run is recorded, so a request
    that came in between looks again for up to ``wait`` seconds.
    """
    deadline = anyio.current_time() + wait
    while True:
        found = await running(agent, session)
        if found is not None or anyio.current_time() >= deadline:
            return found
        await anyio.sleep(POLL)


async def _with_token(agent: SymfonicAgent, event: Event) -> Event:
    """A kept ``turn.paused`` with its token minted again: the interrupt's id."""
    if not isinstance(event, TurnPausedEvent) or event.pause_token:
        return event
    pause = await agent.store.get_pause(event.pause_id)
    if pause is None:
        return event
    return event.model_copy(update={"pause_token": agent.token_for(pause)})
