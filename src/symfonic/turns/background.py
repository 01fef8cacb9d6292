"""A run in the background: a started turn driven to its end by a task, whoever listens, its
refusals decided before its handle is given back and its end recorded on its row.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import anyio
import anyio.abc

from symfonic.core.contracts.run_events import (
    CANCELLED,
    NewRun,
    RunEvent,
    RunState,
    coalesced,
    kept_rows,
)
from symfonic.core.contracts.run_queue import QueuedTurn
from symfonic.core.contracts.types import (
    TERMINAL_EVENTS,
    ErrorEvent,
    Event,
    TurnError,
    TurnResult,
    TurnStartedEvent,
)
from symfonic.turns.event_keeper import keep_events, stored
from symfonic.turns.outcomes import collect, first_event
from symfonic.turns.runtime import TurnRuntime

logger = logging.getLogger("symfonic")

ENDED_WITHOUT_OUTCOME = ErrorEvent(
    code="run_failed", message="the run ended without an outcome: its turn stopped"
)
_STATES = {"complete": RunState.COMPLETE, "paused": RunState.PAUSED, "failed": RunState.FAILED}


Then = Callable[["RunHandle"], Awaitable[None]]


@dataclass(frozen=True)
class RunOwner:
    """Who may see a run: the session's owner, and for a resume the pause's audience."""

    principal: str
    audience: str | None = None
    pause_id: str | None = None


class RunHandle:
    """A run started in the background; `join` waits for its result.

    ``run_id`` is ``None`` when nothing was started: an approval counted toward
    a pause that needs more approvers (its result says where the vote stands).
    """

    def __init__(self, run_id: str | None, session_id: str) -> None:
        self.run_id = run_id
        self.session_id = session_id
        self._done = anyio.Event()
        self._result: TurnResult | None = None
        self._scope = anyio.CancelScope()
        self._seen: list[Event] = []
        self._kept: list[RunEvent] = []
        self._grew = anyio.Event()
        # A first turn's message, as a queue keeps it: a stopping worker hands it back.
        self.asked: QueuedTurn | None = None
        self.handing = self.handed = False

    def __repr__(self) -> str:
        return f"RunHandle(run_id={self.run_id!r}, session_id={self.session_id!r})"

    @property
    def done(self) -> bool:
        return self._done.is_set()

    async def wait(self) -> None:
        """Until the run has ended on this worker."""
        await self._done.wait()

    async def join(self) -> TurnResult:
        """The run's result, once it has ended (on this worker)."""
        await self._done.wait()
        if self._result is None:
            raise RuntimeError("the run did not end on this worker; read it with GET /v1/runs")
        return self._result

    async def events(self) -> AsyncGenerator[Event, None]:
        """The run's events as its turn yields them on this worker, from the first,
        each once and at once (a paused turn's with its token); a run stopped before
        its outcome ends with the ``error`` it ended with. Leaving stops listening,
        never the run."""
        index = 0
        while True:
            grew = self._grew
            while index < len(self._seen):
                index += 1
                yield self._seen[index - 1]
            if self.done:
                break
            await grew.wait()
        if not self._seen or not isinstance(self._seen[-1], TERMINAL_EVENTS):
            error = None if self._result is None else self._result.error
            yield (
                ENDED_WITHOUT_OUTCOME
                if error is None
                else ErrorEvent(code=error.code, message=error.message)
            )

    async def kept_events(self, after: int = 0) -> AsyncGenerator[RunEvent, None]:
        """The run's events numbered after ``after`` as the store keeps them, each once
        it is kept, until the run ended on this worker: no store is read."""
        index = sum(kept.position <= after for kept in self._kept)
        while True:
            grew = self._grew
            while index < len(self._kept):
                index += 1
                yield self._kept[index - 1]
            if self.done:
                return
            await grew.wait()

    def stop(self) -> None:
        """Stop the turn at its next step (its shielded cleanup then runs). Called
        once the store says the run was cancelled, or no longer holds its lease."""
        self._scope.cancel()

    def hand_back(self) -> bool:
        """Stop a first turn whose model has not answered yet (nothing but its
        ``turn.started``), for its run to go back to its session's queue once stopped."""
        self.handing = self.asked is not None and len(self._seen) == 1
        if self.handing:
            self.stop()
        return self.handing

    def _saw(self, event: Event) -> None:
        self._seen.append(event)
        self._grew.set()
        self._grew = anyio.Event()

    def _keep(self, kept: list[RunEvent]) -> None:
        if kept:
            self._kept.extend(kept)
            self._grew.set()
            self._grew = anyio.Event()

    def _finish(self, result: TurnResult | None) -> None:
        self._result = result
        self._done.set()
        self._grew.set()


def outcome_of(result: TurnResult) -> dict[str, Any]:
    """What a run's row keeps of its result: no token, only the pause's id."""
    return {
        "status": result.status,
        "session_id": result.session_id,
        "revision": result.revision,
        "answer": result.answer,
        "pause_id": None if result.pause is None else result.pause.pause_id,
        "error": None
        if result.error is None
        else {"code": result.error.code, "message": result.error.message},
    }


async def start_run(
    agent: TurnRuntime,
    events: AsyncGenerator[Event, None],
    tasks: anyio.abc.TaskGroup,
    owner: RunOwner | None = None,
    *,
    then: Then | None = None,
    logged: RunHandle | None = None,
    kept_first: bool = False,
) -> RunHandle:
    """Start the turn ``events`` yields and hand it to a task of ``tasks``.

    Refusals raise here, before anything is kept. ``owner``: who may see the
    run (default: the session's owner, read once the turn has started). A
    repeat of a resume that already ran in the background is that run again.
    ``then``: awaited once the run has ended here (the session's next queued
    message is taken there). ``logged``: the handle of a run whose row already
    exists (a queued message, taken), which the run then finishes; ``kept_first``:
    that run kept its ``turn.started`` already (it was handed back), which stands.
    """
    first = await first_event(events)
    if not isinstance(first, TurnStartedEvent):
        return await _counted(first, events)
    if logged is not None:
        if kept_first:
            logged._keep([RunEvent(1, first)])
        tasks.start_soon(_drive, agent, logged, first, events, then)
        return logged
    try:  # a first turn's run id is new; a resume's may be a replay's
        exists = first.resumed and await agent.store.run_record(first.run_id) is not None
    except BaseException:
        await events.aclose()
        raise
    if exists:  # a replayed resume: its run already exists
        await events.aclose()
        handle = RunHandle(first.run_id, first.session_id)
        handle._finish(None)
        return handle
    return await start_started(agent, first, events, tasks, owner, then=then)


async def start_started(
    agent: TurnRuntime,
    first: TurnStartedEvent,
    rest: AsyncGenerator[Event, None],
    tasks: anyio.abc.TaskGroup,
    owner: RunOwner | None = None,
    *,
    then: Then | None = None,
) -> RunHandle:
    """Keep and drive, in a task of ``tasks``, a turn whose first event was already
    pulled (its refusals decided) and whose run is not kept yet; ``then`` as for
    `start_run`."""
    handle = RunHandle(first.run_id, first.session_id)
    try:
        if owner is None:
            session = await agent.store.get_session(first.session_id)
            owner = RunOwner(session.principal if session is not None else "")
        now = agent.clock()
        await agent.store.begin_run_log(
            NewRun(
                first.run_id,
                first.session_id,
                owner.principal,
                created_at=now,
                lease_until=now + timedelta(seconds=_lease(agent, first)),
                audience=owner.audience,
                pause_id=owner.pause_id,
            ),
            first,
        )
        handle._keep([RunEvent(1, first)])
    except BaseException:
        await rest.aclose()
        raise
    tasks.start_soon(_drive, agent, handle, first, rest, then)
    return handle


async def _counted(first: Event, rest: AsyncGenerator[Event, None]) -> RunHandle:
    """An approval counted toward a quorum that still waits: nothing runs, so no run
    exists; the handle is already finished, with no run id."""
    result = await collect(_replayed([first, *[event async for event in rest]]))
    handle = RunHandle(None, result.session_id)
    handle._finish(result)
    return handle


async def _drive(
    agent: TurnRuntime,
    handle: RunHandle,
    first: TurnStartedEvent,
    rest: AsyncGenerator[Event, None],
    then: Then | None = None,
) -> None:
    """Run the turn to its end, keeping its events; record how it ended; then ``then``."""
    await _ended(agent, handle, first, rest)
    if then is not None:
        try:
            await then(handle)
        except Exception as error:  # the next run's own failure; this one has ended
            logger.warning("what follows a background run could not start: %s", error)


async def _ended(
    agent: TurnRuntime,
    handle: RunHandle,
    first: TurnStartedEvent,
    rest: AsyncGenerator[Event, None],
) -> None:
    """Run the turn to its end, keeping its events; then record how it ended."""
    result: TurnResult | None = None
    unkept: list[Event] = []
    handle._saw(first)
    seen = handle._seen
    agent.settlement.running[first.run_id] = handle.stop
    try:
        with handle._scope:
            unkept = await _driven(agent, handle, seen, rest)
        if handle._scope.cancel_called and not isinstance(seen[-1], TERMINAL_EVENTS):
            result = _stopped(first, seen)
        else:
            result = await collect(_replayed(seen))
    except Exception as error:  # the turn broke its contract; the run still ends
        logger.error("a background run failed after it started", exc_info=error)
    finally:
        with anyio.CancelScope(shield=True):
            agent.settlement.running.pop(first.run_id, None)
            state = RunState.FAILED if result is None else _STATES[result.status]
            outcome = None if result is None else outcome_of(result)
            last = [*unkept, *([stored(seen[-1])] if isinstance(seen[-1], TERMINAL_EVENTS) else [])]
            back = handle.asked if handle.handing and len(seen) == 1 else None
            try:
                if back is not None and await agent.store.requeue_turn(back, agent.clock()):
                    handle.handed = True
                # A no-op for a run cancelled in the store: it ended there.
                elif await agent.store.end_run_log(
                    first.run_id, state, outcome, agent.clock(), last
                ):
                    position = handle._kept[-1].position if handle._kept else 0
                    rows = kept_rows(coalesced(last), position)
                    handle._keep([RunEvent(position + n, e) for n, e in enumerate(rows, 1)])
            except Exception as error:
                logger.warning("a background run's end could not be recorded: %s", error)
            handle._finish(result)


def _stopped(first: TurnStartedEvent, seen: list[Event]) -> TurnResult:
    return TurnResult(
        "failed",
        first.session_id,
        first.base_revision,
        error=TurnError(CANCELLED.code, CANCELLED.message),
        events=tuple(seen),
    )


async def _driven(
    agent: TurnRuntime, handle: RunHandle, seen: list[Event], rest: AsyncGenerator[Event, None]
) -> list[Event]:
    """Every event of the turn into ``seen``, each but the terminal one handed to the
    keeper; once it has written them, the deltas it still gathered, for the run's end."""
    first = seen[0]
    assert isinstance(first, TurnStartedEvent)
    run_id = first.run_id
    unkept: list[Event] = []
    send, receive = anyio.create_memory_object_stream[Event](math.inf)
    async with anyio.create_task_group() as renewing:
        renewing.start_soon(_renew, agent, first, handle)
        async with anyio.create_task_group() as keeping:
            written = len(handle._kept)  # 1 once the run's row was begun with its first
            keeping.start_soon(
                keep_events, agent.store, run_id, receive, handle._keep, unkept, written
            )
            with send:
                if not written:
                    send.send_nowait(seen[0])
                async with aclosing(rest):
                    async for event in rest:
                        handle._saw(event)
                        if not isinstance(event, TERMINAL_EVENTS):
                            send.send_nowait(event)
        renewing.cancel_scope.cancel()
    return unkept


async def _replayed(events: list[Event]) -> AsyncGenerator[Event, None]:
    for event in events:
        yield event


def _lease(agent: TurnRuntime, first: TurnStartedEvent) -> float:
    """The run's lease: its turn's own (a resume's claim, a first turn's run marker), so
    a run lost with its worker reads ``failed`` when its turn's hold lapses."""
    return agent.claim_lease if first.resumed else agent.run_lease


async def _renew(agent: TurnRuntime, first: TurnStartedEvent, handle: RunHandle) -> None:
    """Extend the run's lease every third of it until cancelled (its turn keeps its own
    hold); a run the store no longer holds as running is stopped."""
    lease = _lease(agent, first)
    while True:
        await anyio.sleep(lease / 3)
        try:
            until = agent.clock() + timedelta(seconds=lease)
            if not await agent.store.renew_run_log(first.run_id, until):
                handle.stop()
        except Exception as error:
            logger.warning("a background run's lease could not be renewed: %s", error)
