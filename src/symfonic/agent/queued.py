"""An agent's queued messages: queueing one, and running a session's queue.

A message queued here (:func:`~symfonic.turns.queue.enqueue`) runs when a worker
takes it: :meth:`QueuedMessages.run_queued`, which the end of every background
run calls for its session, in the same task group, or a sweep. Handles given out
for messages queued here wait in ``_waiting`` until the run each becomes starts
in this process, which then finishes it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol

from anyio.abc import TaskGroup

from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import TakenTurn
from symfonic.core.contracts.types import Event
from symfonic.turns.background import RunHandle, Then
from symfonic.turns.queue import Started, enqueue, run_next
from symfonic.turns.runtime import TurnRuntime
from symfonic.turns.start import OnPendingPause, first_turn


class QueuingAgent(TurnRuntime, Protocol):
    """What running a queue needs of the agent: a turn's runtime, opened, traced."""

    _waiting: dict[str, RunHandle]

    async def open(self) -> None: ...

    def _traced(
        self, turn: AsyncGenerator[Event, None], who: Principal, session_id: str | None
    ) -> AsyncGenerator[Event, None]: ...

    async def run_queued(
        self, session_id: str, tasks: TaskGroup, started: Started | None = None
    ) -> RunHandle | None: ...

    def _taken(self, taken: TakenTurn) -> AsyncGenerator[Event, None]: ...


class QueuedMessages:
    """The agent's calls that queue a message and run a session's queue."""

    async def enqueue(
        self: QueuingAgent,
        message: str,
        session_id: str,
        principal: Principal | str = "local",
        *,
        base_revision: int | None = None,
        on_pending_pause: OnPendingPause = "reject",
    ) -> str:
        """Queue ``message``, refusals first; its run's id. It runs when a worker takes
        it (:meth:`run_queued`, or a sweep; docs/runs.md)."""
        await self.open()
        who = Principal.of(principal)
        return await enqueue(self, who, message, session_id, base_revision, on_pending_pause)

    async def run_queued(
        self: QueuingAgent, session_id: str, tasks: TaskGroup, started: Started | None = None
    ) -> RunHandle | None:
        """Run the session's next queued message in ``tasks`` if the session is free,
        then each one after it; ``None`` when none was taken."""
        await self.open()
        return await run_next(self, session_id, tasks, self._taken, started, self._waiting)

    def _taken(self: QueuingAgent, taken: TakenTurn) -> AsyncGenerator[Event, None]:
        queued, held = taken.turn, (taken.start, taken.turn.run_id)
        who = Principal(queued.principal, queued.scopes)
        turn = first_turn(self, who, queued.message, queued.session_id, held=held)
        return self._traced(turn, who, queued.session_id)

    def _then_queued(self: QueuingAgent, tasks: TaskGroup, started: Started | None) -> Then:
        async def then(ended: RunHandle) -> None:
            await self.run_queued(ended.session_id, tasks, started)

        return then
