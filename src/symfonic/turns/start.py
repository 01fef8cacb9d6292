"""A first turn: a user message run to an answer, a pause, or an error.

Every refusal is checked before the first event, and the stream ends with exactly one
terminal event.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing
from datetime import datetime, timedelta
from typing import Literal, NoReturn

from langchain_core.messages import HumanMessage

from symfonic.core.contracts.errors import (
    RevisionConflict,
    SessionBusy,
    SessionNotFound,
    SessionPaused,
    TurnStopped,
)
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import PauseRecord, RunRequest, RunStart, SessionRecord
from symfonic.core.contracts.types import (
    Event,
    KernelDone,
    KernelResult,
    PauseState,
    ResponseCompleteEvent,
    StopReason,
    TurnPausedEvent,
    TurnStartedEvent,
)
from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.core.messages import messages_of
from symfonic.kernel.limits import Limits
from symfonic.turns.budget import (
    AdmittedBudget,
    IssuerScope,
    admit_resume_budget,
    admitted,
)
from symfonic.turns.lease import Heartbeats
from symfonic.turns.outcomes import error_event
from symfonic.turns.resumed_turn import FinalObserver
from symfonic.turns.runtime import TurnRuntime
from symfonic.turns.started_turn import MarkerLease, StartedTurn
from symfonic.turns.stopping import TurnStopper

OnPendingPause = Literal["reject", "abandon"]
# What a message does when another turn holds its session (docs/runs.md).
OnBusy = Literal["reject", "enqueue", "interrupt", "rollback"]
# What a turn that runs now (not queued) may do about the turn holding its session.
TakeOver = Literal["reject", "interrupt", "rollback"]


async def owned_session(agent: TurnRuntime, session_id: str, principal: Principal) -> SessionRecord:
    """The session, if this principal owns it; others are told it does not exist."""
    session = await agent.store.get_session(session_id)
    if session is None or (session.principal != principal.name and "*" not in principal.scopes):
        raise SessionNotFound(f"no session {session_id!r}", session_id=session_id)
    return session


async def _refuse(
    agent: TurnRuntime,
    session_id: str,
    principal: Principal,
    *,
    base_revision: int | None,
    on_pending_pause: OnPendingPause,
    now: datetime,
    takes_over: bool = False,
) -> NoReturn:
    """Say why the run marker was refused, from the session as it is now; a turn
    that ``takes_over`` a busy session was refused for another reason first."""
    session = await owned_session(agent, session_id, principal)
    open_pause = await agent.store.open_pause(session_id)
    claimed = open_pause is not None and open_pause.state is PauseState.CLAIMED
    if claimed and not takes_over:
        raise SessionBusy("a resumed turn is running on this session", session_id=session_id)
    refuse_paused_or_stale(session, open_pause, base_revision, on_pending_pause, now)
    raise SessionBusy("another turn is running on this session", session_id=session_id)


def refuse_paused_or_stale(
    session: SessionRecord,
    open_pause: PauseRecord | None,
    base_revision: int | None,
    on_pending_pause: OnPendingPause,
    now: datetime,
) -> None:
    """Refuse a message the session cannot take as it is: a pause still waiting for
    its answer (unless the message abandons it), or a ``base_revision`` the session
    is not at. A turn that runs now and a message queued for later are refused alike."""
    if open_pause is not None and open_pause.answerable(now) and on_pending_pause == "reject":
        raise SessionPaused(
            "this session is waiting for an answer to a pause; answer it, or send the "
            "turn with on_pending_pause=abandon",
            session_id=session.session_id,
            pause_id=open_pause.pause_id,
        )
    if base_revision is not None and base_revision != session.revision:
        raise RevisionConflict(
            f"the session is at revision {session.revision}, not {base_revision}",
            revision=session.revision,
        )


async def _begin(
    agent: TurnRuntime,
    principal: Principal,
    session_id: str,
    run_id: str,
    base_revision: int | None,
    on_pending_pause: OnPendingPause,
    on_busy: OnBusy = "reject",
    seen_holder: str | None = None,
) -> RunStart:
    """Set the session's run marker for ``run_id``, or raise why not. With
    ``interrupt`` or ``rollback``, whatever turn holds the session is cancelled in
    the same transaction (`TurnInterrupts`)."""
    now = agent.clock()
    # Every check that can refuse the turn is in the statement that marks it
    # running, so the turn that may go on costs one write; a refused one reads why.
    request = RunRequest(
        session_id,
        run_id,
        now=now,
        lease_until=now + timedelta(seconds=agent.run_lease),
        principal=None if "*" in principal.scopes else principal.name,
        base_revision=base_revision,
        refuse_pending=on_pending_pause == "reject",
        seen_holder=seen_holder,
    )
    takes_over = on_busy in ("interrupt", "rollback")
    if takes_over:
        taken = await agent.store.interrupt_turn(request, forget=on_busy == "rollback")
        start = None if taken is None else taken.start
        stop = None if taken is None else agent.settlement.running.get(taken.cancelled_run or "")
        if stop is not None:
            stop()  # its run is this process's: stopped now, not when the store is heard
    else:
        start = await agent.store.begin_run(request)
    if start is None:
        await _refuse(
            agent,
            session_id,
            principal,
            base_revision=base_revision,
            on_pending_pause=on_pending_pause,
            now=now,
            takes_over=takes_over,
        )
    return start


async def _held(
    agent: TurnRuntime,
    principal: Principal,
    session_id: str | None,
    base_revision: int | None,
    on_pending_pause: OnPendingPause,
    on_busy: OnBusy,
    run_id: str,
    held: tuple[RunStart, str] | None,
) -> tuple[RunStart, AdmittedBudget | None]:
    """The session held for the turn as ``run_id``, and its budget if admitted already:
    a queued message's was when it was queued, and a takeover's is admitted before
    it cancels anything, so that a refused quota cancels nothing."""
    if held is not None:
        return held[0], admitted(agent.limits)
    if session_id is None:
        session_id = await agent.create_session(principal)
    budget, seen_holder = None, None
    if on_busy in ("interrupt", "rollback"):
        seen = await owned_session(agent, session_id, principal)
        budget = admit_resume_budget(agent, IssuerScope(seen.principal, agent.name))
        seen_holder = seen.run_id
    start = await _begin(
        agent, principal, session_id, run_id, base_revision, on_pending_pause, on_busy, seen_holder
    )
    return start, budget


async def first_turn(
    agent: TurnRuntime,
    principal: Principal,
    message: str,
    session_id: str | None,
    *,
    base_revision: int | None = None,
    on_pending_pause: OnPendingPause = "reject",
    on_busy: OnBusy = "reject",
    held: tuple[RunStart, str] | None = None,
) -> AsyncGenerator[Event, None]:
    """Run ``message`` as a new turn of the session (a new one if ``None``).

    Publishing or recording the pause ends the run in the same transaction;
    only a turn that did neither has a run marker left to clear. ``on_busy``:
    ``interrupt`` or ``rollback`` cancels the turn that holds the session, as
    this one begins (``enqueue`` is the caller's: `symfonic.turns.queue`).
    ``held``: the session already held for this turn and its run id (a queued
    message taken). A takeover stops it at its next step (`symfonic.turns.stopping`)."""
    run_id = uuid.uuid4().hex if held is None else held[1]
    # Findable before the marker is set: a takeover landing right after it stops this turn.
    stopper = TurnStopper.of(agent.settlement.running, run_id)
    try:
        start, budget = await _held(
            agent, principal, session_id, base_revision, on_pending_pause, on_busy, run_id, held
        )
    except BaseException:
        stopper.ended()
        raise
    session = start.session
    session_id = session.session_id
    scope = IssuerScope(session.principal, agent.name)
    turn = StartedTurn(agent.settlement, session_id, run_id, scope, session.revision, principal)
    failure: FailedTurn | None = None
    try:
        budget = budget or admit_resume_budget(agent, scope)
        # Abandoned only once nothing can refuse the turn any more, so a refused
        # turn leaves the pending pause answerable.
        if start.pending_pause:
            await agent.store.abandon_pending(session_id)
        yield _started(agent, session, run_id)
        observe = FinalObserver(budget.event_guard)
        try:
            run = _run(agent, observe, budget.prepared_plan, start, message, principal, run_id)
            async with aclosing(run) as events:
                while (raw := await stopper.step(events)) is not None:
                    yield raw
            assert observe.result is not None
            yield await _settle(agent, turn, observe.result)
        except TurnStopped as stopped:  # taken over: no failure is owed for it
            yield error_event(stopped)
        except Exception as error:
            failed = error_event(error)
            failure = FailedTurn(
                run_id, session_id, agent.name, failed.code, failed.message, agent.clock()
            )
            yield failed
    finally:
        stopper.ended()
        await turn.end(failure)


def _started(agent: TurnRuntime, session: SessionRecord, run_id: str) -> TurnStartedEvent:
    """A first turn's first event: its run, and the revision it started from."""
    return TurnStartedEvent(
        session_id=session.session_id,
        run_id=run_id,
        agent=agent.name,
        base_revision=session.revision,
        resumed=False,
    )


async def _run(
    agent: TurnRuntime,
    observe: FinalObserver,
    plan: Limits,
    start: RunStart,
    message: str,
    principal: Principal,
    run_id: str,
) -> AsyncGenerator[Event, None]:
    """The kernel's rounds on the message, up to (not including) its done result, the
    turn's run marker renewed on a heartbeat meanwhile."""
    session_id = start.session.session_id
    kernel = agent.kernel(session_id, plan, principal=principal)
    run = kernel.run(agent.context(messages_of(start.history)), [HumanMessage(content=message)])
    lease = MarkerLease(agent.store, session_id, run_id, seconds=agent.run_lease, clock=agent.clock)
    async with aclosing(run) as events, Heartbeats(lease.renew_if_due, lease.interval):
        async for raw in events:
            observe(raw)
            if isinstance(raw, KernelDone):
                return
            yield raw


async def _settle(agent: TurnRuntime, turn: StartedTurn, result: KernelResult) -> Event:
    """Record the turn's pause, or publish its answer; the frame that says which."""
    if result.stop_reason is StopReason.PAUSED:
        paused: TurnPausedEvent = await turn.pause(result, now=agent.clock())
        return paused
    answer, revision = await turn.publish(result)
    return ResponseCompleteEvent(answer=answer, revision=revision)
