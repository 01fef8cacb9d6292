"""A first turn: a user message run to an answer, a pause, or an error.

Everything that can refuse the turn (unknown session, another turn running, a
pending pause, a stale ``base_revision``, the quota) is checked before the
first event, so a transport can answer with a plain error instead of a stream.
After ``turn.started`` the stream always ends with exactly one of
``response.complete``, ``turn.paused`` or ``error``, and the session is left
either published at the next revision, paused, or exactly as it was.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing
from datetime import datetime, timedelta
from typing import Literal, NoReturn

import anyio
from langchain_core.messages import HumanMessage

from symfonic.core.contracts.errors import (
    RevisionConflict,
    SessionBusy,
    SessionNotFound,
    SessionPaused,
)
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import RunRequest, SessionRecord
from symfonic.core.contracts.types import (
    Event,
    KernelDone,
    PauseState,
    ResponseCompleteEvent,
    StopReason,
    TurnStartedEvent,
)
from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.core.messages import messages_of
from symfonic.turns.budget import IssuerScope, admit_resume_budget
from symfonic.turns.outcomes import error_event, logger
from symfonic.turns.resumed_turn import FinalObserver
from symfonic.turns.runtime import TurnRuntime
from symfonic.turns.settlement import answer_of_result

OnPendingPause = Literal["reject", "abandon"]


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
) -> NoReturn:
    """Say why the run marker was refused, from the session as it is now."""
    session = await owned_session(agent, session_id, principal)
    open_pause = await agent.store.open_pause(session_id)
    if open_pause is not None and open_pause.state is PauseState.CLAIMED:
        raise SessionBusy("a resumed turn is running on this session", session_id=session_id)
    if open_pause is not None and open_pause.answerable(now) and on_pending_pause == "reject":
        raise SessionPaused(
            "this session is waiting for an answer to a pause; answer it, or send the "
            "turn with on_pending_pause=abandon",
            session_id=session_id,
            pause_id=open_pause.pause_id,
        )
    if base_revision is not None and base_revision != session.revision:
        raise RevisionConflict(
            f"the session is at revision {session.revision}, not {base_revision}",
            revision=session.revision,
        )
    raise SessionBusy("another turn is running on this session", session_id=session_id)


async def first_turn(
    agent: TurnRuntime,
    principal: Principal,
    message: str,
    session_id: str | None,
    *,
    base_revision: int | None = None,
    on_pending_pause: OnPendingPause = "reject",
) -> AsyncGenerator[Event, None]:
    store = agent.store
    if session_id is None:
        session_id = await agent.create_session(principal)
    now = agent.clock()
    run_id = uuid.uuid4().hex
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
    )
    start = await store.begin_run(request)
    if start is None:
        await _refuse(
            agent,
            session_id,
            principal,
            base_revision=base_revision,
            on_pending_pause=on_pending_pause,
            now=now,
        )
    session = start.session
    # Publishing or recording the pause ends the run in the same transaction;
    # only a turn that did neither has a run marker left to clear.
    ended = False
    failure: FailedTurn | None = None
    try:
        scope = IssuerScope(session.principal, agent.name)
        budget = admit_resume_budget(agent, scope)
        # Abandoned only once nothing can refuse the turn any more, so a refused
        # turn leaves the pending pause answerable.
        if start.pending_pause:
            await store.abandon_pending(session_id)
        history = messages_of(start.history)
        yield TurnStartedEvent(
            session_id=session_id,
            run_id=run_id,
            agent=agent.name,
            base_revision=session.revision,
            resumed=False,
        )
        observe = FinalObserver(budget.event_guard)
        try:
            kernel = agent.kernel(session_id, budget.prepared_plan, principal=principal)
            run = kernel.run(agent.context(history), [HumanMessage(content=message)])
            async with aclosing(run) as events:
                async for raw in events:
                    observe(raw)
                    if isinstance(raw, KernelDone):
                        break
                    yield raw
            result = observe.result
            assert result is not None
            if result.stop_reason is StopReason.PAUSED:
                paused = agent.settlement.paused_event(result, now=agent.clock())
                await agent.settlement.record_pause(
                    session_id,
                    scope,
                    paused,
                    result,
                    session.revision,
                    run_id=run_id,
                    principal=principal,
                )
                ended = True
                yield paused
                return
            answer = answer_of_result(result)
            revision = await agent.settlement.publish_turn(
                session_id, session.revision, result.messages, run_id
            )
            ended = True
            yield ResponseCompleteEvent(answer=answer, revision=revision)
        except Exception as error:
            failed = error_event(error)
            failure = FailedTurn(
                run_id, session_id, agent.name, failed.code, failed.message, agent.clock()
            )
            yield failed
    finally:
        if not ended:
            with anyio.CancelScope(shield=True):
                try:
                    await store.end_run(session_id, run_id, failure)
                except Exception:
                    logger.warning(
                        "could not clear a finished turn's run marker (if the store was out "
                        "of reach, its next sweep after it is back clears it)",
                        exc_info=True,
                    )
