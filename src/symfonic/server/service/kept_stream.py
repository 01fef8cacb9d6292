"""A turn a client listens to, run as a kept run that outlives its request: a request that goes
away stops only the listening, and another request on any worker can join the turn.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

from symfonic.agent.agent import SymfonicAgent
from symfonic.core.contracts.types import Event, TurnStartedEvent
from symfonic.server.service.runs import WorkerRuns
from symfonic.turns.background import RunHandle, RunOwner, start_started
from symfonic.turns.outcomes import first_event


async def kept_stream(
    runs: WorkerRuns,
    agent: SymfonicAgent,
    events: AsyncGenerator[Event, None],
    owner: RunOwner | None = None,
) -> AsyncGenerator[Event, None]:
    """The turn ``events`` yields, run in ``runs`` and listened to until its end, when
    the session's next queued message runs, as after any background run.

    ``owner``: who may see the run (default: the session's owner). Refusals
    raise at the first ``__anext__``, before anything is kept.
    """
    first = await first_event(events)
    try:
        handle = await _started(runs, agent, first, events, owner)
    except BaseException:
        await events.aclose()
        raise
    if handle is None:
        async with aclosing(events):
            yield first
            async for event in events:
                yield event
        return
    runs.track(handle)
    async with aclosing(handle.events()) as live:
        async for event in live:
            yield event


async def _started(
    runs: WorkerRuns,
    agent: SymfonicAgent,
    first: Event,
    rest: AsyncGenerator[Event, None],
    owner: RunOwner | None,
) -> RunHandle | None:
    """The run started, or ``None`` for a stream that runs nothing."""
    if not isinstance(first, TurnStartedEvent):
        return None  # an approval counted toward a quorum
    if first.resumed and await agent.store.run_record(first.run_id) is not None:
        return None  # a resume replayed: its run is kept already
    tasks = runs.tasks

    async def then(ended: RunHandle) -> None:
        await agent.run_queued(ended.session_id, tasks, runs.track)

    return await start_started(agent, first, rest, tasks, owner, then=then)
