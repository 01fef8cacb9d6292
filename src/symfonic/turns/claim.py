"""A resume's third step: the budget admitted, then the single-use claim, the one conditional
statement that decides a race between workers, returning the `ResumedTurn` it won.
"""

from __future__ import annotations

import uuid
from contextlib import suppress
from datetime import datetime

import anyio

from symfonic.capabilities.human.turnstate import ClaimedTurn, TurnCheckpointStore
from symfonic.core.contracts.errors import StoreUnavailable
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import Ballot, Claim, PauseRecord, Store
from symfonic.core.contracts.types import Answer, AnswerStatus
from symfonic.turns.budget import IssuerScope
from symfonic.turns.lease import ClaimLease
from symfonic.turns.quorum import is_vote, proposal
from symfonic.turns.refusals import edited_meanwhile
from symfonic.turns.resumed_turn import ResumedTurn, admit_turn
from symfonic.turns.runtime import TurnRuntime


async def take_claim(store: Store, claim: Claim, *, session_id: str) -> ClaimedTurn | None:
    """Claim a pause and read its turn; ``None``: the claim lost.

    A claim whose reply was lost may still have committed: it is abandoned (a
    no-op if it did not) rather than left ``claimed``; if even that fails, the
    lease lapses and the sweeper abandons it.
    """
    try:
        return await TurnCheckpointStore(store).claim(claim)
    except StoreUnavailable:
        with anyio.CancelScope(shield=True), suppress(StoreUnavailable):
            await store.abandon_claim(session_id, claim.claim_id)
        raise


async def take_vote(
    store: Store, ballot: Ballot, *, session_id: str
) -> ClaimedTurn | PauseRecord | None:
    """Count one approval toward the pause's quorum: the turn its claim won when it was
    the last one needed, else the pause as the vote left it; ``None``: no longer pending.

    A principal already counted gets the pause as it stands, counted once: a replay.
    A vote for arguments an edit replaced meanwhile is refused as ``stale_question``.
    A vote whose reply was lost is treated as `take_claim` treats a claim's.
    """
    try:
        voted = await TurnCheckpointStore(store).vote(ballot)
    except StoreUnavailable:
        with anyio.CancelScope(shield=True), suppress(StoreUnavailable):
            await store.abandon_claim(session_id, ballot.claim.claim_id)
        raise
    if voted is None or isinstance(voted, ClaimedTurn):
        return voted
    if voted.stale:
        raise edited_meanwhile(voted.pause)
    return voted.pause


async def claim(
    agent: TurnRuntime,
    pause: PauseRecord,
    answer: Answer,
    principal: Principal,
    status: AnswerStatus,
    now: datetime,
    edited_args_digest: str | None = None,
) -> ResumedTurn | PauseRecord | None:
    """Admit the turn, then claim the pause; the turn won, or ``None``: the claim lost.

    An approval of a pause that needs several is a vote (`quorum`):
    it claims only when it is the last one needed, and otherwise hands back the
    pause as the vote left it, still pending; an edit of it is a new proposal.
    ``edited_args_digest``: an edit's digest of the call it runs, written with the claim.
    """
    proposed = None
    if is_vote(pause, answer, status):
        proposed = await proposal(
            agent.store, agent.toolbox, pause, answer, principal.name, edited_args_digest
        )
    scope = IssuerScope(pause.principal, pause.agent)
    admitted = admit_turn(agent, scope, budgeted=True)
    claim_id = uuid.uuid4().hex
    lease = ClaimLease(
        agent.store, pause.session_id, claim_id, seconds=agent.claim_lease, clock=agent.clock
    )
    request = Claim(
        pause.pause_id,
        claim_id,
        principal.name,
        answer,
        status,
        now,
        lease.until(),
        edited_args_digest,
    )
    if is_vote(pause, answer, status):
        ballot = Ballot(request, pause.args_digest, proposed)
        voted = await take_vote(agent.store, ballot, session_id=pause.session_id)
        if voted is None or isinstance(voted, PauseRecord):
            return voted
        claimed: ClaimedTurn | None = voted
    else:
        claimed = await take_claim(agent.store, request, session_id=pause.session_id)
    if claimed is None:
        return None
    return ResumedTurn.won(
        agent.settlement, scope, principal.name, lease, claimed, admitted=admitted
    )
