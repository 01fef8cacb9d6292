"""Deciding a resume: who may answer, whether it is still open, and the claim.

Everything that can refuse the request is checked before the claim, so a
refused request never spends the token: the token must verify, the principal
must be allowed to answer, the pause must be pending and unexpired. The claim
is then the one conditional statement that decides a race between workers.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any, NamedTuple, TypeVar

import anyio

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
        return PauseAlreadyClaimed(
            f"this pause is already being answered{_by_whom(pause)}", pause_id=pause.pause_id
        )
    return PauseAlreadyAnswered(
        f"this pause was already answered{_by_whom(pause)}, with a different answer",
        pause_id=pause.pause_id,
    )


def _by_whom(pause: PauseRecord) -> str:
    """Who answered and when, for a person who may answer the pause and so may know."""
    who = f" by {pause.answered_by}" if pause.answered_by else ""
    if pause.answered_at is None:
        return who
    return f"{who} at {pause.answered_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def replayable(pause: PauseRecord, answer: Answer, status: AnswerStatus) -> bool:
    """A settled pause answered with this very answer: the request is a replay."""
    settled = pause.state in (PauseState.PUBLISHED, PauseState.SUPERSEDED)
    return settled and same_answer(pause, answer, status)


async def authorised_pause(
    agent: TurnRuntime,
    token: str,
    principal: Principal,
    now: datetime,
    read: PauseRecord | None = None,
) -> PauseRecord:
    """The pause the token names, if ``principal`` may answer it.

    ``read``: the record as the caller just read it, used only if it is the
    token's own pause; the token, not the record, decides which pause this is.
    Failing that, the record this agent kept when it wrote the pause while it
    is unexpired (past that, only the row can say whether it was answered in
    time), else the row. The kept record is taken either way: a pause asked
    about once is not kept any longer.
    """
    pause_id = agent.settlement.signer.verify(token)
    kept = None if pause_id is None else agent.settlement.recent.take(pause_id)
    pause = read if read is not None and read.pause_id == pause_id else None
    if pause is None and kept is not None and kept.answerable(now):
        pause = kept
    if pause is None and pause_id is not None:
        pause = await agent.store.get_pause(pause_id)
    if pause is None:
        raise PauseNotFound("the token does not name a pause")
    if pause.parent_session_id is not None:
        # A delegate's own pause is answered only through the pause that stands for it.
        raise PauseNotFound(
            "the token names a delegate's pause, which is answered through its caller's pause",
            pause_id=pause.pause_id,
        )
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


async def _claimed(store: Store, claim: Claim, taking: Awaitable[T], *, session_id: str) -> T:
    """The claim's outcome. A claim whose reply was lost may still have committed:
    abandon it (a no-op if it did not) rather than leave the pause ``claimed``."""
    try:
        return await taking
    except StoreUnavailable:
        # If even that fails, the lease lapses and the sweeper abandons it.
        with anyio.CancelScope(shield=True), suppress(StoreUnavailable):
            await store.abandon_claim(session_id, claim.claim_id)
        raise


async def claim_read(
    agent: TurnRuntime,
    pause: PauseRecord,
    answer: Answer,
    principal: Principal,
    status: AnswerStatus,
    now: datetime,
    edited_args_digest: str | None = None,
) -> WonClaim | None:
    """Claim a pause read, authorised and validated first; ``None``: the claim lost.

    ``edited_args_digest``: an edit's digest of the call it runs, written with the claim."""
    scope = IssuerScope(pause.principal, pause.agent)
    turn = ResumedTurn(agent.settlement, principal.name, pause.session_id, scope, uuid.uuid4().hex)
    admitted = turn.admission(budgeted=True)(agent, scope)
    lease = ClaimLease(
        agent.store, pause.session_id, turn.claim_id, seconds=agent.claim_lease, clock=agent.clock
    )
    claim = Claim(
        pause.pause_id,
        turn.claim_id,
        principal.name,
        answer,
        status,
        now,
        lease.until(),
        edited_args_digest,
    )
    taking = TurnCheckpointStore(agent.store).claim(claim)
    claimed = await _claimed(agent.store, claim, taking, session_id=pause.session_id)
    return None if claimed is None else WonClaim(pause, turn, admitted, lease, claimed)
