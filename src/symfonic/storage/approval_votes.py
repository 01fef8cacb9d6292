"""Counting the approvals of a pause that needs several: one transaction per vote, under the
pause row's lock, so two last approvals on two workers are counted one after the other and only
the second completes the quorum (docs/approvals.md).
"""

from __future__ import annotations

from dataclasses import replace

from symfonic.core.contracts.approvals import Ballot, Proposal, VoteOutcome
from symfonic.core.contracts.audit import AuditEntry
from symfonic.core.contracts.pauses import Claim, ClaimedPause, PauseRecord
from symfonic.core.contracts.types import ApprovalVote
from symfonic.core.contracts.webhooks import WebhookEventType
from symfonic.core.telemetry.store_spans import claim_attributes, voted
from symfonic.storage.audit_log import append
from symfonic.storage.history import read_history
from symfonic.storage.pause_changes import APPROVED
from symfonic.storage.pause_claims import CLAIM, claim_params
from symfonic.storage.readdressing import OWE, RECORD_CHANGE
from symfonic.storage.rows import PAUSE_COLUMNS, approvals_json, aware, checkpoint_of, pause_of
from symfonic.storage.statements import Dialect, Row, Statement, first, json_text
from symfonic.storage.transactions import Connection, SqlTransactions

_PENDING = (
    f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses"
    " WHERE pause_id = :pause_id AND state = 'pending' AND expires_at > :at"
)
TAKE_PAUSE = {
    Dialect.SQLITE: Statement(_PENDING),
    Dialect.POSTGRESQL: Statement(f"{_PENDING} FOR UPDATE"),
}
CAST_VOTE = Statement(
    "INSERT INTO symfonic_pause_approvals (pause_id, principal, at, args_digest)"
    " VALUES (:pause_id, :principal, :at, :args_digest)"
    " ON CONFLICT (pause_id, principal) DO NOTHING"
)
DROP_VOTES = Statement("DELETE FROM symfonic_pause_approvals WHERE pause_id = :pause_id")
PROPOSE = Statement(
    "UPDATE symfonic_pauses SET args_digest = :args_digest, query = :query,"
    " checkpoint_format = :checkpoint_format, checkpoint = :checkpoint"
    " WHERE pause_id = :pause_id AND state = 'pending'"
)
VOTES = Statement(
    "SELECT principal, at FROM symfonic_pause_approvals WHERE pause_id = :pause_id"
    " ORDER BY at, principal"
)
SET_APPROVALS = Statement(
    "UPDATE symfonic_pauses SET approvals = :approvals WHERE pause_id = :pause_id"
)


def _vote_of(row: Row) -> ApprovalVote:
    at = aware(row["at"])
    assert at is not None
    return ApprovalVote(row["principal"], at)


def _audited(pause: PauseRecord, principal: str, proposal: Proposal | None) -> AuditEntry:
    """The vote's audit record; an edit's holds the digest it replaced and its own."""
    return AuditEntry(
        event="approved",
        session_id=pause.session_id,
        agent=pause.agent,
        pause_id=pause.pause_id,
        principal=principal,
        decision="approve" if proposal is None else "edit",
        args_digest=pause.args_digest,
        edited_args_digest=None if proposal is None else proposal.args_digest,
        parent_session_id=pause.parent_session_id,
    )


async def _propose(connection: Connection, pause: PauseRecord, proposal: Proposal) -> PauseRecord:
    """Make the edit the pause's proposal: its votes dropped, its call, digest and
    question replaced."""
    await connection.count(DROP_VOTES, {"pause_id": pause.pause_id})
    checkpoint = proposal.checkpoint
    proposed = {
        "pause_id": pause.pause_id,
        "args_digest": proposal.args_digest,
        "query": proposal.query,
        "checkpoint_format": checkpoint.format_version,
        "checkpoint": json_text(checkpoint.body),
    }
    await connection.count(PROPOSE, proposed)
    return replace(pause, args_digest=proposal.args_digest, query=proposal.query, approvals=())


async def _claim(connection: Connection, dialect: Dialect, claim: Claim) -> ClaimedPause | None:
    """The quorum's claim, inside the vote's transaction: the statement any claim runs."""
    row = first(await connection.rows(CLAIM[Dialect.SQLITE], claim_params(claim)))
    if row is None:
        return None
    history = await read_history(connection, dialect, row["session_id"], row["base_revision"])
    return ClaimedPause(checkpoint_of(row), history)


async def _told(connection: Connection, dialect: Dialect, pause: PauseRecord, claim: Claim) -> None:
    """A counted vote as a change on the live feed and the ``pause.approved`` webhooks owed."""
    change = {"pause_id": pause.pause_id, "session_id": pause.session_id, "kind": APPROVED}
    (row,) = await connection.rows(RECORD_CHANGE[dialect], change)
    owed = {
        "message_id": f"msg_pause_{row['id']}",
        "pause_id": pause.pause_id,
        "session_id": pause.session_id,
        "at": row["at"],
        "detail": json_text({"approved_by": claim.principal}),
        "type": WebhookEventType.PAUSE_APPROVED.value,
    }
    await connection.count(OWE, owed)


async def vote(connection: Connection, dialect: Dialect, ballot: Ballot) -> VoteOutcome | None:
    """One approval, in the caller's transaction; see the module's docstring."""
    claim, proposal = ballot.claim, ballot.proposal
    taken = first(
        await connection.rows(TAKE_PAUSE[dialect], {"pause_id": claim.pause_id, "at": claim.at})
    )
    if taken is None:
        return None
    asked = pause_of(taken)
    if asked.args_digest != ballot.asked_digest:
        return VoteOutcome(asked, stale=True)
    pause = asked if proposal is None else await _propose(connection, asked, proposal)
    cast = {
        "pause_id": claim.pause_id,
        "principal": claim.principal,
        "at": claim.at,
        "args_digest": pause.args_digest,
    }
    if await connection.count(CAST_VOTE, cast) == 0:
        return VoteOutcome(pause, already=True)
    votes = tuple(_vote_of(row) for row in await connection.rows(VOTES, cast))
    await connection.count(
        SET_APPROVALS, {"pause_id": claim.pause_id, "approvals": json_text(approvals_json(votes))}
    )
    await append(connection, _audited(asked, claim.principal, proposal))
    counted = replace(pause, approvals=votes)
    if len(votes) < pause.approvals_required:
        await _told(connection, dialect, pause, claim)
        return VoteOutcome(counted)
    claimed = await _claim(connection, dialect, claim)
    # The row is held since it was read pending and unexpired: the claim cannot miss.
    return None if claimed is None else VoteOutcome(counted, claimed=claimed)


class SqlApprovalVotes(SqlTransactions):
    """The port's `ApprovalVotes`, in SQL."""

    async def vote_pause(self, ballot: Ballot) -> VoteOutcome | None:
        dialect = self.dialect

        async def cast(connection: Connection) -> VoteOutcome | None:
            return await vote(connection, dialect, ballot)

        outcome = await self.transaction(
            cast, "vote_pause", claim_attributes(ballot.claim), voted(ballot)
        )
        self.pause_log.voted(ballot, outcome)
        return outcome
