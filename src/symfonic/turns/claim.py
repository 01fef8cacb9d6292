"""Deciding a resume: who may answer, whether it is still open, and the claim.

Everything that can refuse the request is checked before the claim, so a
refused request never spends the token: the token must verify, the principal
must be allowed to answer, the pause must be pending and unexpired. The claim
is then the one conditional statement that decides a race between workers.

An owner's answer that needs no schema (a cancellation, the plain approval),
to an agent without a quota, is claimed without the pause being read first:
the checks the read would serve are then the claim's own condition, and a
claim that does not meet them writes nothing and falls back to reading the
pause, which refuses the request as it always would.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable
from contextlib import suppress
from datetime import datetime, timedelta
from typing import Any, NamedTuple, TypeVar

import anyio

from symfonic.capabilities.human.answers import kinds_admitting
from symfonic.capabilities.human.turnstate import ClaimedTurn, TurnCheckpointStore
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
    Answer,
    AnswerStatus,
    PauseState,
)
from symfonic.turns.budget import IssuerScope
from symfonic.turns.lease import ClaimLease
from symfonic.turns.resumed_turn import Admitted, ResumedTurn
from symfonic.turns.runtime import TurnRuntime

T = TypeVar("T")


def same_answer(pause: PauseRecord, answer: Answer, status: AnswerStatus) -> bool:
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


def replayable(pause: PauseRecord, answer: Answer, status: AnswerStatus) -> bool:
    """A settled pause answered with this very answer: the request is a replay."""
    settled = pause.state in (PauseState.PUBLISHED, PauseState.SUPERSEDED)
    return settled and same_answer(pause, answer, status)


async def authorised_pause(
    agent: TurnRuntime, token: str, principal: Principal, read: PauseRecord | None = None
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


class WonClaim(NamedTuple):
    """A claim this request won: the pause, and what its turn runs with."""

    pause: PauseRecord
    turn: ResumedTurn
    admitted: Admitted
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


async def claim_read(
    agent: TurnRuntime,
    pause: PauseRecord,
    answer: Answer,
    principal: Principal,
    status: AnswerStatus,
    now: datetime,
) -> WonClaim | None:
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
    return None if claimed is None else WonClaim(pause, turn, admitted, lease, claimed)


async def claim_unread(
    agent: TurnRuntime, token: str, answer: Answer, principal: Principal, status: AnswerStatus
) -> WonClaim | None:
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
    return WonClaim(pause, turn, admitted, lease, claimed)


