"""This worker's runs: the task group they run in, the turns it may have to stop, and
the followers of any worker's run (from memory for a run here, else from the store).
docs/runs.md says how each hears of new events and of a cancel.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing

import anyio
import anyio.abc

from symfonic.agent.agent import SymfonicAgent
from symfonic.core.contracts.errors import RequestError, StoreUnavailable
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.run_events import RunEvent, RunRecord, RunState
from symfonic.core.contracts.types import (
    TERMINAL_EVENTS,
    ErrorEvent,
    Event,
    TurnPausedEvent,
    TurnStartedEvent,
)
from symfonic.server.service.host import ServiceHost
from symfonic.turns.background import RunHandle

logger = logging.getLogger("symfonic.http")

RECHECK_SECONDS = 1.0
# How long the watch outlives the last run or follower here: the next one, often a
# moment later, then finds it set up (on PostgreSQL, a connection).
LINGER_SECONDS = 5.0
# A run still to come or still running: its follower waits for its events.
_GOING_ON = frozenset({RunState.QUEUED, RunState.RUNNING})
# A run this worker runs and must stop: cancelled, or rolled back, on any worker.
_STOPPED = frozenset({RunState.CANCELLED, RunState.FORGOTTEN})
RETRY_DELAY = 1.0
# How long the watch remembers the runs it heard of: one tracked here just after its
# cancel was heard looks once, since the watch told nobody of it then.
HEARD_SECONDS = 5.0
READ_BATCH = 200
# Sessions one sweep looks at for queued messages to take.
QUEUE_BATCH = 100


class RunsUnavailable(RequestError):
    """No task group runs background runs here (an app whose lifespan did not run)."""

    code = "runs_unavailable"
    status = 503


class _Follower:
    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.nudged = anyio.Event()


class WorkerRuns:
    """The task group of this worker's runs, the runs it must stop, and their followers."""

    def __init__(self, host: ServiceHost) -> None:
        self._host = host
        for agent in host.agents.values():
            agent.started_runs.watch = False  # tracked here, on this worker's one watch
        self._tasks: anyio.abc.TaskGroup | None = None
        self._followers: set[_Follower] = set()
        self._local: dict[str, RunHandle] = {}
        # Attached first turns streamed here, by run id: how to stop each.
        self._attached: dict[str, Callable[[], None]] = {}
        self._lingering = False
        self._wanted = anyio.Event()
        self._watching: anyio.CancelScope | None = None
        # The free queue heads the last sweep found, as (session, run).
        self._free_heads: set[tuple[str, str]] = set()
        # Runs the watch heard of in this period and the one before (HEARD_SECONDS each).
        self._heard: tuple[set[str], set[str]] = (set(), set())
        self._heard_since = 0.0

    def __repr__(self) -> str:
        return f"WorkerRuns({len(self._local)} running, {len(self._followers)} followers)"

    @property
    def available(self) -> bool:
        """Whether runs can be started here: the app's lifespan holds their task group."""
        return self._tasks is not None

    @property
    def tasks(self) -> anyio.abc.TaskGroup:
        """Where a background run's task goes; 503 when nothing runs them here."""
        if self._tasks is None:
            raise RunsUnavailable("background runs are not available on this worker")
        return self._tasks

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Hold the runs' task group and watch the store for followers, until cancelled."""
        try:
            async with anyio.create_task_group() as tasks:
                self._tasks = tasks
                task_status.started()
                await self._watch_while_followed()
        finally:
            self._tasks = None

    async def _watch_while_followed(self) -> None:
        while True:
            if not self._watched():
                self._wanted = anyio.Event()
                await self._wanted.wait()
            try:
                with anyio.CancelScope() as self._watching:
                    async with aclosing(self._host.store.watch_run_events()) as watch:
                        listening = False
                        async for run_ids in watch:
                            # What was kept before the watch listened was heard by
                            # nobody: once it listens, every run watched here looks again.
                            self._wake(set(run_ids) if listening else self._watched())
                            listening = True
            except StoreUnavailable as error:
                logger.warning(
                    "the watch of run events was lost; again in %gs: %s", RETRY_DELAY, error
                )
                await anyio.sleep(RETRY_DELAY)
            finally:
                self._watching = None

    def _watched(self) -> set[str]:
        followed = {follower.run_id for follower in self._followers}
        return followed | self._local.keys() | self._attached.keys()

    def _wake(self, run_ids: set[str]) -> None:
        self._note_heard(run_ids)
        for follower in self._followers:
            if follower.run_id in run_ids:
                follower.nudged.set()
        for run_id in run_ids & self._local.keys():
            self.tasks.start_soon(self._stop_if_cancelled, self._local[run_id])
        for run_id in run_ids & self._attached.keys():
            self.tasks.start_soon(self._stop_if_taken_over, run_id)

    def _note_heard(self, run_ids: set[str]) -> None:
        now = anyio.current_time()
        if now - self._heard_since > HEARD_SECONDS:
            self._heard, self._heard_since = (set(), self._heard[0]), now
        self._heard[0].update(run_ids)

    def _was_heard(self, run_id: str) -> bool:
        return run_id in self._heard[0] or run_id in self._heard[1]

    def _stop_watching_if_idle(self) -> None:
        if not self._watched() and self._watching is not None:
            self._watching.cancel()

    # this worker's runs -------------------------------------------------------

    def track(self, handle: RunHandle, on_end: Callable[[], None] = lambda: None) -> None:
        """A run this worker runs: stopped as soon as the store says it was cancelled.
        ``on_end`` is called once it ended here (at once for a run that is not running)."""
        if handle.run_id is None or handle.done:
            on_end()
            return
        self._local[handle.run_id] = handle
        self._wanted.set()
        self.tasks.start_soon(self._forget_when_done, handle.run_id, handle, on_end)
        if self._was_heard(handle.run_id):  # cancelled, perhaps, before it was tracked
            self.tasks.start_soon(self._stop_if_cancelled, handle)

    async def _forget_when_done(
        self, run_id: str, handle: RunHandle, on_end: Callable[[], None]
    ) -> None:
        try:
            await handle.wait()
        finally:
            self._local.pop(run_id, None)
            on_end()
            self._linger()

    async def _stop_if_cancelled(self, handle: RunHandle) -> None:
        record = None if handle.run_id is None else await self._host.store.run_record(handle.run_id)
        if record is None or record.state in _STOPPED:
            handle.stop()

    async def _stop_if_taken_over(self, run_id: str) -> None:
        """Stop the attached turn if a row says it was cancelled: it keeps none otherwise."""
        try:
            record = await self._host.store.run_record(run_id)
        except Exception as error:  # its publish is refused all the same
            logger.warning("could not read whether an attached turn was interrupted: %s", error)
            return
        stop = self._attached.get(run_id)
        if record is not None and record.state in _STOPPED and stop is not None:
            stop()

    @property
    def running_here(self) -> int:
        """How many background runs run on this worker now."""
        return len(self._local)

    async def cancel_here(self) -> tuple[int, int]:
        """Stop each run still running here (this worker stops): a first turn whose
        model has not answered goes back to its session's queue for the others, any
        other is cancelled as a cancel does; how many of each. A run whose cancel
        cannot be written fails once its lease lapses."""
        running = list(self._local.items())
        handing = [handle for _, handle in running if handle.hand_back()]
        for run_id, handle in running:
            if handle in handing:
                continue
            try:
                await self._host.store.cancel_run(run_id, self._agent.clock())
            except Exception as error:
                logger.warning("a background run could not be cancelled: %s", error)
            handle.stop()
        for handle in handing:
            await handle.wait()
        handed = sum(handle.handed for handle in handing)
        return len(running) - handed, handed

    async def cancel(self, run_id: str, principal: Principal) -> RunRecord:
        """Cancel the run on whichever worker runs it (the agent's cancel, whose store
        logs the pause it abandons), and stop it now if it runs here."""
        cancelled = await self._agent.cancel_run(run_id, principal)
        local = self._local.get(run_id)
        if local is not None:
            local.stop()
        return cancelled

    # queued messages ----------------------------------------------------------

    def run_queued_soon(self, agent: SymfonicAgent, session_id: str) -> None:
        """Run the session's next queued message here, if the session is free: a turn
        on it just ended on this worker."""
        if self._tasks is not None:
            self._tasks.start_soon(self._run_queued, agent, session_id)

    async def then_queued(
        self, agent: SymfonicAgent, session_id: str, events: AsyncGenerator[Event, None]
    ) -> AsyncGenerator[Event, None]:
        """An attached turn's ``events``; once it ends, its session's next queued message.
        A first turn is stopped meanwhile if another worker's message takes it over."""
        run_id = None
        try:
            async with aclosing(events) as turn:
                async for event in turn:
                    if run_id is None and isinstance(event, TurnStartedEvent):
                        run_id = self._attach(agent, event)
                    yield event
        finally:
            if run_id is not None and self._attached.pop(run_id, None) is not None:
                self._linger()
            self.run_queued_soon(agent, session_id)

    def _linger(self) -> None:
        """Stop watching ``LINGER_SECONDS`` from now, if nothing is watched here then."""
        if not self._lingering and self._tasks is not None:
            self._lingering = True
            self._tasks.start_soon(self._idle_after_linger)

    async def _idle_after_linger(self) -> None:
        try:
            await anyio.sleep(LINGER_SECONDS)
        finally:
            self._lingering = False
        self._stop_watching_if_idle()

    def _attach(self, agent: SymfonicAgent, started: TurnStartedEvent) -> str | None:
        """Track an attached first turn (its stop is its own while it runs); its run id."""
        stop = agent.settlement.running.get(started.run_id)
        if started.resumed or stop is None or self._tasks is None:
            return None
        self._attached[started.run_id] = stop
        self._wanted.set()
        if self._was_heard(started.run_id):  # interrupted, perhaps, before it was tracked
            self._tasks.start_soon(self._stop_if_taken_over, started.run_id)
        return started.run_id

    async def _run_queued(self, agent: SymfonicAgent, session_id: str) -> None:
        try:
            await agent.run_queued(session_id, self.tasks, self.track)
        except Exception as error:  # a sweep takes it later
            logger.warning("a queued message could not be started: %s", error)

    async def take_free_queues(self) -> int:
        """Start here the queued messages no other worker is taking; how many.

        A head whose session's hold lapsed (the worker holding it died) is taken
        at once. A head whose session is simply free is taken only when the last
        pass found it free too: the worker that ended the turn before it takes it
        first, within milliseconds, unless that worker runs no queue (an AG-UI
        turn, a Python turn served by no app), and then it waits one pass.
        """
        if self._tasks is None:
            return 0
        agent = self._host.agents[self._host.default_agent]
        heads = await self._host.store.free_queue_heads(agent.clock(), QUEUE_BATCH)
        seen, self._free_heads = self._free_heads, {(h.session_id, h.run_id) for h in heads}
        taken = 0
        for head in heads:
            if not head.lapsed and (head.session_id, head.run_id) not in seen:
                continue
            try:
                owner = await self._host.agent_of_session(head.session_id)
            except RequestError:
                continue  # an agent this worker does not serve
            taken += await owner.run_queued(head.session_id, self.tasks, self.track) is not None
        return taken

    # reading runs -------------------------------------------------------------

    @property
    def _agent(self) -> SymfonicAgent:
        return self._host.agents[self._host.default_agent]

    async def visible_run(self, run_id: str, principal: Principal) -> RunRecord:
        """The run, if ``principal`` may see it; 404 ``run_not_found`` otherwise."""
        return await self._agent.get_run(run_id, principal)

    def state_of(self, record: RunRecord) -> RunState:
        """The run's state now, on the default agent's clock."""
        return record.state_at(self._agent.clock())

    async def follow(
        self, record: RunRecord, principal: Principal, after: int = 0
    ) -> AsyncGenerator[RunEvent, None]:
        """The run's kept events after ``after``, then the new ones, until its end."""
        local = self._local.get(record.run_id)
        if local is not None:  # running here: its events from memory, as they are kept
            async with aclosing(local.kept_events(after)) as kept:
                async for event in kept:
                    yield await self._for(principal, event)
                    if isinstance(event.event, TERMINAL_EVENTS):
                        return
                    after = event.position
        follower = _Follower(record.run_id)
        self._followers.add(follower)
        self._wanted.set()
        try:
            async with aclosing(self._events(follower, principal, after)) as events:
                async for event in events:
                    yield event
        finally:
            self._followers.discard(follower)
            self._linger()

    async def _events(
        self, follower: _Follower, principal: Principal, after: int
    ) -> AsyncGenerator[RunEvent, None]:
        store, run_id = self._host.store, follower.run_id
        while True:
            follower.nudged = anyio.Event()  # before the read: a later append sets it
            events = await store.run_events_after(run_id, after, limit=READ_BATCH)
            for kept in events:
                yield await self._for(principal, kept)
                after = kept.position
                if isinstance(kept.event, TERMINAL_EVENTS):
                    return
            if len(events) == READ_BATCH:
                continue
            record = await store.run_record(run_id)
            if record is None or record.state is RunState.FORGOTTEN:
                yield RunEvent(after + 1, _GONE)  # rolled back, or past its time to live
                return
            if self.state_of(record) not in _GOING_ON:
                if not await store.run_events_after(run_id, after, limit=1):
                    yield RunEvent(after + 1, _ENDED_WITHOUT_OUTCOME)
                    return
                continue  # its last events committed between the two reads
            with anyio.move_on_after(RECHECK_SECONDS):
                await follower.nudged.wait()

    async def _for(self, principal: Principal, kept: RunEvent) -> RunEvent:
        """The event as this follower sees it: a pause's token only for who may answer."""
        event = kept.event
        if not isinstance(event, TurnPausedEvent):
            return kept
        pause = await self._host.store.get_pause(event.pause_id)
        agent = None if pause is None else self._host.agents.get(pause.agent)
        if pause is None or agent is None or not principal.may_answer(pause):
            return kept
        if not pause.answerable(agent.clock()):
            return kept
        return RunEvent(
            kept.position, event.model_copy(update={"pause_token": agent.token_for(pause)})
        )


_GONE = ErrorEvent(
    code="run_not_found",
    message="the run is no longer kept: a new message rolled it back, or it ended "
    "longer ago than runs are kept",
)
_ENDED_WITHOUT_OUTCOME = ErrorEvent(
    code="run_failed",
    message="the run ended without an outcome: the worker running it stopped",
)
