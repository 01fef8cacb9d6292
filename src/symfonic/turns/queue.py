"""A message for a busy session, refused first as a turn that would run now, queued, then
taken once by the store's single claim and run once: by the worker that ends the turn
before it, or by any worker's sweep once that worker died (docs/runs.md)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncGenerator, Callable, MutableMapping
from datetime import timedelta

import anyio.abc

from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.run_queue import QueuedTurn, TakenTurn
from symfonic.core.contracts.types import Event
from symfonic.turns.background import RunHandle, start_run
from symfonic.turns.runtime import TurnRuntime
from symfonic.turns.start import OnPendingPause, owned_session, refuse_paused_or_stale

logger = logging.getLogger("symfonic")

TurnOf = Callable[[TakenTurn], AsyncGenerator[Event, None]]
Started = Callable[[RunHandle], None]


async def enqueue(
    agent: TurnRuntime,
    principal: Principal,
    message: str,
    session_id: str,
    base_revision: int | None = None,
    on_pending_pause: OnPendingPause = "reject",
) -> str:
    """Queue ``message`` behind the session's turn and its earlier messages; its run's id.

    Refused first, as a turn that would run now: 404 for another's session, 409
    for a pending pause it would refuse or a ``base_revision`` the session is not
    at, 429 for the quota.
    """
    session = await owned_session(agent, session_id, principal)
    now = agent.clock()
    pause = await agent.store.open_pause(session_id)
    refuse_paused_or_stale(session, pause, base_revision, on_pending_pause, now)
    if agent.quota is not None:
        agent.quota.admit(session.principal)
    run_id = uuid.uuid4().hex
    turn = QueuedTurn(
        run_id=run_id,
        session_id=session_id,
        owner=session.principal,
        principal=principal.name,
        scopes=principal.scopes,
        message=message,
        on_pending_pause=on_pending_pause,
        queued_at=now,
    )
    await agent.store.enqueue_turn(turn)
    return run_id


async def run_next(
    agent: TurnRuntime,
    session_id: str,
    tasks: anyio.abc.TaskGroup,
    turn_of: TurnOf,
    started: Started | None = None,
    waiting: MutableMapping[str, RunHandle] | None = None,
) -> RunHandle | None:
    """Take the session's next queued message, if the session is free, and run it in
    ``tasks``; once it ends, the one after it. ``None`` when nothing was taken.

    ``turn_of``: the turn a taken message runs (the agent's first turn, traced).
    ``started``: told of each run this starts (a worker tracks it, to stop it
    when it is cancelled elsewhere). ``waiting``: handles given out when
    messages were queued here, which the runs they become finish.
    """
    left = agent.settlement.left_for_others
    if left is not None:  # this process is stopping: it starts nothing new
        left.add(session_id)
        return None
    now = agent.clock()
    lease_until = now + timedelta(seconds=agent.run_lease)
    taken = await agent.store.take_queued_turn(session_id, now, lease_until)
    if taken is None:
        return None
    run_id = taken.turn.run_id
    handle = (waiting or {}).pop(run_id, None) or RunHandle(run_id, session_id)
    handle.asked = taken.turn

    async def after(_: RunHandle) -> None:
        await run_next(agent, session_id, tasks, turn_of, started, waiting)

    try:
        turn = turn_of(taken)
        await start_run(agent, turn, tasks, then=after, logged=handle, kept_first=taken.kept > 0)
    except Exception as error:
        # Its hold and its run lapse with their lease; a sweep takes the next then.
        logger.warning("a queued message could not start: %s", error)
        return None
    if started is not None:
        started(handle)
    return handle
