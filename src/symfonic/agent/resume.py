"""A resume: verify, validate, admit, claim, run on, then publish or release.

The order is the guarantee. Everything that can refuse the request -- a token
that does not verify, a principal who may not answer, a pause no longer
pending, an answer that fails the schema, a refused budget -- is checked before
the claim, so a refused request never spends the token. The claim is the one
conditional statement that decides the race; after it, :class:`ResumedTurn`
either publishes, records a second pause, or moves the pause to ``abandoned``,
each write retried within the claim's lease while the store is out of reach.

An owner's answer that needs no schema (a cancellation, the plain approval),
to an agent without a quota, is claimed without the pause being read first:
the checks the read would serve are then the claim's own condition, and a
claim that does not meet them writes nothing and falls back to reading the
pause, which refuses the request as it always would.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, Awaitable
from contextlib import aclosing, suppress
from datetime import datetime, timedelta
from typing import Any, NamedTuple, TypeVar

import anyio

from symfonic.agent.cutover.kernel_resume import kernel_resume
from symfonic.agent.outcomes import error_event
from symfonic.capabilities.human.answers import kinds_admitting, validate_answer
from symfonic.capabilities.human.turnstate import ClaimedTurn, ResumeOutcome, TurnCheckpointStore
from symfonic.core.contracts.errors import (
    PauseAbandoned,
    PauseAlreadyAnswered,
    PauseAlreadyClaimed,
    PauseExpired,
    PauseForbidden,
    PauseNotFound,
    RequestError,
    StoreUnavailable,
)
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import Claim, PauseRecord, Store
from symfonic.core.contracts.types import (
    AnswerStatus,
    Event,
    KernelDone,
    PauseState,
    ResponseCompleteEvent,
    StopReason,
    TurnPausedEvent,
    TurnStartedEvent,
)
from symfonic.core.messages import messages_of
from symfonic.platform.resume_budget import IssuerScope
from symfonic.turns.lease import ClaimLease
from symfonic.turns.resumed_turn import ResumedTurn
from symfonic.turns.runtime import TurnRuntime

T = TypeVar("T")


def _same_answer(pause: PauseRecord, answer: Any, status: AnswerStatus) -> bool:
    def canonical(value: Any) -> str:
        return json.dumps(value, sort_keys=True, default=str)

    return pause.answer_status == status and canonical(pause.answer) == canonical(answer)


def refusal(pause: PauseRecord, now: datetime) -> RequestError:
    """Why a pause that is not pending and unexpired cannot be answered."""
    if pause.state is PauseState.PENDING or pause.state is PauseState.EXPIRED:
        return PauseExpired(
            f"this pause expired at {pause.expires_at.isoformat()}", pause_id=pause.pause_id
        )
    if pause.state is PauseState.ABANDONED:
        return PauseAbandoned(
            "this pause was abandoned and can no longer be answered", pause_id=pause.pause_id
        )
    if pause.state is PauseState.CLAIMED:
        return PauseAlreadyClaimed("this pause is already being answered", pause_id=pause.pause_id)
    return PauseAlreadyAnswered(
        "this pause was already answered with a different answer", pause_id=pause.pause_id
    )


def _replayable(pause: PauseRecord, answer: Any, status: AnswerStatus) -> bool:
    """A settled pause answered with this very answer: the request is a replay."""
    settled = pause.state in (PauseState.PUBLISHED, PauseState.SUPERSEDED)
    return settled and _same_answer(pause, answer, status)


async def authorised_pause(
    agent: TurnRuntime, token: object, principal: Principal, read: PauseRecord | None = None
) -> PauseRecord:
    """The pause the token names, if ``principal`` may answer it.

    ``read``: the record as the caller just read it, used only if it is the
    token's own pause; the token, not the record, decides which pause this is.
    """
    pause_id = agent.guarded.signer.verify(token)
    pause = read if read is not None and read.pause_id == pause_id else None
    if pause is None and pause_id is not None:
        pause = await agent.store.get_pause(pause_id)
    if pause is None:
        raise PauseNotFound("the token does not name a pause")
    if not principal.may_answer(pause):
        raise PauseForbidden(f"{principal.name} may not answer this pause", pause_id=pause.pause_id)
    return pause


async def _replay(agent: TurnRuntime, pause: PauseRecord) -> list[Event]:
    """The outcome an identical, already-settled resume produced, without running anything."""
    outcome = pause.outcome or {}
    started = TurnStartedEvent(
        session_id=pause.session_id,
        run_id=pause.claim_id or "",
        agent=pause.agent,
        base_revision=pause.base_revision,
        resumed=True,
    )
    if outcome.get("status") == "complete":
        return [
            started,
            ResponseCompleteEvent(answer=outcome["answer"], revision=pause.base_revision + 1),
        ]
    follow = await agent.store.get_pause(outcome["pause_id"])
    assert follow is not None
    return [
        started,
        TurnPausedEvent(
            pause_id=follow.pause_id,
            pause_token=agent.token_for(follow),
            interrupt_id=follow.interrupt_id,
            tool_call_id=follow.tool_call_id,
            kind=follow.kind,
            query=follow.query,
            response_schema=follow.response_schema,
            expires_at=follow.expires_at,
        ),
    ]


class _Won(NamedTuple):
    """A claim this request won: the pause, and what its turn runs with."""

    pause: PauseRecord
    turn: ResumedTurn
    admitted: Any
    lease: ClaimLease
    claimed: ClaimedTurn


async def _claimed(
    store: Store, claim: Claim, taking: Awaitable[T], *, session_id: str | None
) -> T:
    """The claim's outcome. A claim whose reply was lost may still have committed:
    abandon it (a no-op if it did not) rather than leave the pause ``claimed``."""
    try:
        return await taking
    except StoreUnavailable:
        # If even that fails, the lease lapses and the sweeper abandons it.
        with anyio.CancelScope(shield=True), suppress(StoreUnavailable):
            if session_id is None:  # claimed unread: the row says whose session it is
                row = await store.get_pause(claim.pause_id)
                session_id = None if row is None else row.session_id
            if session_id is not None:
                await store.abandon_claim(session_id, claim.claim_id)
        raise


async def _claim_read(
    agent: TurnRuntime,
    pause: PauseRecord,
    answer: Any,
    principal: Principal,
    status: AnswerStatus,
    now: datetime,
) -> _Won | None:
    """Claim a pause read, authorised and validated first; ``None``: the claim lost."""
    scope = IssuerScope(pause.principal, pause.agent)
    turn = ResumedTurn(agent.guarded, principal.name, pause.session_id, scope, uuid.uuid4().hex)
    admitted = turn.admission(budgeted=True)(agent, scope)
    lease = ClaimLease(
        agent.store, pause.session_id, turn.claim_id, seconds=agent.claim_lease, clock=agent.clock
    )
    claim = Claim(pause.pause_id, turn.claim_id, principal.name, answer, status, now, lease.until())
    taking = TurnCheckpointStore(agent.store).claim(claim, now=now)
    claimed = await _claimed(agent.store, claim, taking, session_id=pause.session_id)
    return None if claimed is None else _Won(pause, turn, admitted, lease, claimed)


async def _claim_unread(
    agent: TurnRuntime, token: object, answer: Any, principal: Principal, status: AnswerStatus
) -> _Won | None:
    """Claim the caller's own pause without reading it first, where nothing read is needed.

    That is when the answer is valid for every pause of some kinds (a
    cancellation, the plain approval), so no schema need be read to validate
    it, and when the agent has no quota, whose admission before the claim
    would count against the pause's owner. The claim's condition then holds
    everything the read would have checked (pending, unexpired, no audience,
    the caller's own, this agent's, of such a kind), and saves a round trip.
    ``None`` when this does not apply or the condition does not hold: nothing
    was written, and the caller reads the pause, which says why.
    """
    kinds = kinds_admitting(answer, status)
    if not kinds or agent.quota is not None:
        return None
    pause_id = agent.guarded.signer.verify(token)
    if pause_id is None:
        return None
    now = agent.clock()
    # What the condition guarantees of a pause it claims: the caller's, of this agent.
    scope = IssuerScope(principal.name, agent.name)
    turn = ResumedTurn(agent.guarded, principal.name, "", scope, uuid.uuid4().hex)
    admitted = turn.admission(budgeted=True)(agent, scope)
    lease_until = now + timedelta(seconds=agent.claim_lease)
    claim = Claim(pause_id, turn.claim_id, principal.name, answer, status, now, lease_until)
    checkpoints = TurnCheckpointStore(agent.store)
    taking = checkpoints.claim_own(claim, agent=agent.name, kinds=kinds, now=now)
    won = await _claimed(agent.store, claim, taking, session_id=None)
    if won is None:
        return None
    pause, claimed = won
    turn.session_id = pause.session_id  # known once the claim has returned the row
    # Counted from ``now``, as the lease the claim wrote was.
    lease = ClaimLease(
        agent.store,
        pause.session_id,
        turn.claim_id,
        seconds=agent.claim_lease,
        clock=agent.clock,
        renewed=now,
    )
    return _Won(pause, turn, admitted, lease, claimed)


async def resume_turn(
    agent: TurnRuntime,
    token: object,
    answer: Any,
    principal: Principal,
    status: AnswerStatus = "resolved",
    *,
    pause: PauseRecord | None = None,
) -> AsyncGenerator[Event, None]:
    won = None
    if pause is None:
        won = await _claim_unread(agent, token, answer, principal, status)
    if won is None:
        pause = await authorised_pause(agent, token, principal, pause)
        now = agent.clock()
        if pause.state is not PauseState.PENDING or pause.expires_at <= now:
            if _replayable(pause, answer, status):
                for event in await _replay(agent, pause):
                    yield event
                return
            raise refusal(pause, now)
        validate_answer(pause.response_schema, answer, status, pause.kind)
        won = await _claim_read(agent, pause, answer, principal, status, now)
        if won is None:
            # Lost the race. If the winner has already settled with this very
            # answer, this request is an identical replay and gets its outcome.
            latest = await agent.store.get_pause(pause.pause_id) or pause
            if _replayable(latest, answer, status):
                for event in await _replay(agent, latest):
                    yield event
                return
            raise refusal(latest, agent.clock())
    pause, turn, admitted, lease, claimed = won
    turn.claimed = True
    turn.lease = lease  # from here on, the claim's writes wait out an unreachable store
    try:
        try:
            history = messages_of(claimed.history)
            yield TurnStartedEvent(
                session_id=pause.session_id,
                run_id=turn.claim_id,
                agent=agent.name,
                base_revision=pause.base_revision,
                resumed=True,
            )
            # The lease is checked after every yield, before any more work: a
            # consumer can hold the stream at a frame past the lease, and the
            # gated call must not run for a claim the sweeper has taken back.
            await lease.keep()
            outcome = ResumeOutcome(
                turn=claimed.turn,
                response=answer,
                tool_call_id=pause.tool_call_id,
                interrupt_id=pause.interrupt_id,
                status=status,
            )
            kernel = agent.kernel(pause.session_id, admitted.plan, heartbeat=lease.beat)
            resumed = kernel_resume(kernel, outcome, agent.context(history))
            async with aclosing(resumed) as events:
                async for raw in events:
                    admitted.observe(raw)
                    if isinstance(raw, KernelDone):
                        break
                    yield raw
                    await lease.keep()
            result = admitted.observe.result
            assert result is not None
            terminal: Event
            if result.stop_reason is StopReason.PAUSED:
                terminal = agent.guarded.paused_event(result, now=agent.clock())
                await turn.settle(terminal)
            else:
                terminal = ResponseCompleteEvent(answer=result.answer)
                await turn.settle(terminal)
                terminal = terminal.model_copy(update={"revision": turn.revision})
        except Exception as error:
            await turn.release()
            yield error_event(error)
            return
        yield terminal
    finally:
        await turn.release()
