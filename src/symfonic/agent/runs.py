"""An agent's background runs: starting a turn or a resume as a run, and reading
and cancelling runs.

A run outlives the request that started it (docs/runs.md), so every refusal is
decided before :meth:`BackgroundRuns.start` or :meth:`BackgroundRuns.start_resume`
returns, and the turn then runs in the caller's task group whether or not anyone
listens. A run may be read or cancelled from any worker; the runs this agent
started and still drives are kept in ``_started`` (weakly: a handle nobody holds
is a run that ended), so that a cancel made here stops its turn at the next step
instead of waiting for the worker to hear of it.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncGenerator
from typing import Protocol

from anyio.abc import TaskGroup

from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.run_events import RunRecord
from symfonic.core.contracts.types import Answer, AnswerStatus, Event
from symfonic.turns.background import RunHandle, RunOwner, Then, start_run
from symfonic.turns.queue import Started
from symfonic.turns.resolve import ResolvedPause, resolve
from symfonic.turns.run_access import cancel_run, visible_run
from symfonic.turns.runtime import TurnRuntime
from symfonic.turns.start import OnBusy, OnPendingPause, TakeOver


class RunningAgent(TurnRuntime, Protocol):
    """What starting a run needs of the agent: its turns as streams, and its queue."""

    _waiting: dict[str, RunHandle]
    _started: weakref.WeakValueDictionary[str, RunHandle]

    async def open(self) -> None: ...

    def stream(
        self,
        message: str,
        session_id: str | None = None,
        principal: Principal | str = "local",
        *,
        base_revision: int | None = None,
        on_pending_pause: OnPendingPause = "reject",
        on_busy: TakeOver = "reject",
    ) -> AsyncGenerator[Event, None]: ...

    def resume_stream(
        self,
        token: str | ResolvedPause,
        answer: Answer,
        principal: Principal | str = "local",
        *,
        status: AnswerStatus = "resolved",
        args_digest: str | None = None,
    ) -> AsyncGenerator[Event, None]: ...

    async def enqueue(
        self,
        message: str,
        session_id: str,
        principal: Principal | str = "local",
        *,
        base_revision: int | None = None,
        on_pending_pause: OnPendingPause = "reject",
    ) -> str: ...

    async def run_queued(
        self, session_id: str, tasks: TaskGroup, started: Started | None = None
    ) -> RunHandle | None: ...

    def _then_queued(self, tasks: TaskGroup, started: Started | None) -> Then: ...

    def _driving(self, handle: RunHandle) -> RunHandle: ...


class BackgroundRuns:
    """The agent's calls that start, read and cancel runs."""

    async def start(
        self: RunningAgent,
        message: str,
        session_id: str | None = None,
        principal: Principal | str = "local",
        *,
        tasks: TaskGroup,
        base_revision: int | None = None,
        on_pending_pause: OnPendingPause = "reject",
        on_busy: OnBusy = "reject",
        started: Started | None = None,
    ) -> RunHandle:
        """Start a turn that runs in ``tasks`` whether or not anyone listens
        (docs/runs.md); refusals raise here, before it runs.

        ``on_busy="enqueue"``: the message waits in the session's queue while
        another turn holds the session, and runs after it, in order; the handle
        joins it once it has run here. ``interrupt`` and ``rollback``: as
        :meth:`stream`. When the run ends, the session's next
        queued message runs in ``tasks``; ``started`` is told of each such run.
        """
        if on_busy == "enqueue":
            who = Principal.of(principal)
            if session_id is None:
                session_id = await self.create_session(who)
            queued = await self.enqueue(
                message,
                session_id,
                who,
                base_revision=base_revision,
                on_pending_pause=on_pending_pause,
            )
            waiting = self._waiting[queued] = RunHandle(queued, session_id)
            await self.run_queued(session_id, tasks, started)
            return waiting
        turn = self.stream(
            message,
            session_id,
            principal,
            base_revision=base_revision,
            on_pending_pause=on_pending_pause,
            on_busy=on_busy,
        )
        then = self._then_queued(tasks, started)
        return self._driving(await start_run(self, turn, tasks, then=then))

    async def start_resume(
        self: RunningAgent,
        token: str | ResolvedPause,
        answer: Answer,
        principal: Principal | str = "local",
        *,
        tasks: TaskGroup,
        status: AnswerStatus = "resolved",
        args_digest: str | None = None,
        started: Started | None = None,
    ) -> RunHandle:
        """Answer a pause and run its turn on in ``tasks``; refusals and the claim
        are decided here, before this returns. Then as :meth:`start`."""
        await self.open()
        if isinstance(token, str):
            token = await resolve(self.settlement, token, self.clock())
        pause = token.pause
        turn = self.resume_stream(token, answer, principal, status=status, args_digest=args_digest)
        owner = RunOwner(pause.principal, pause.audience, pause.pause_id)
        then = self._then_queued(tasks, started)
        return self._driving(await start_run(self, turn, tasks, owner, then=then))

    def _driving(self: RunningAgent, handle: RunHandle) -> RunHandle:
        if handle.run_id is not None and not handle.done:
            self._started[handle.run_id] = handle
        return handle

    async def get_run(
        self: RunningAgent, run_id: str, principal: Principal | str = "local"
    ) -> RunRecord:
        """A run ``principal`` may see (docs/runs.md); :class:`RunNotFound` otherwise."""
        await self.open()
        return await visible_run(self, run_id, Principal.of(principal))

    async def cancel_run(
        self: RunningAgent, run_id: str, principal: Principal | str = "local"
    ) -> RunRecord:
        """Cancel a run started here or on any worker, as it reads once cancelled.

        It publishes nothing, and a resume's pause is ``abandoned``. A run this
        agent started is stopped at its next step here; elsewhere its worker hears
        of the cancel. :class:`RunNotRunning` when it already ended or settled.
        """
        await self.open()
        cancelled = await cancel_run(self, run_id, Principal.of(principal))
        started = self._started.get(run_id)
        if started is not None:
            started.stop()
        return cancelled
