"""A pause's claim: one conditional `UPDATE` moves it from `pending` to `claimed` for exactly
one worker, and only its own claim id renews it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from opentelemetry.trace import Span

from symfonic.core.contracts.pauses import Claim, ClaimedPause
from symfonic.core.telemetry.store_spans import claim_attributes, claimed
from symfonic.storage.history import postgres_history, with_history
from symfonic.storage.rows import CHECKPOINT_COLUMNS, checkpoint_of
from symfonic.storage.statements import Dialect, Row, Statement, json_text
from symfonic.storage.transactions import SqlTransactions

# The rows a claim's own later writes may touch: its pause, while it holds it.
CLAIMED_BY = "WHERE session_id = :session_id AND claim_id = :claim_id AND state = 'claimed'"
RENEW_CLAIM = Statement(f"UPDATE symfonic_pauses SET lease_until = :lease_until {CLAIMED_BY}")

_CLAIM = (
    "UPDATE symfonic_pauses SET state = 'claimed', claim_id = :claim_id,"
    " lease_until = :lease_until, answered_by = :principal, answered_at = :at,"
    " answer = :answer, answer_status = :status, edited_args_digest = :edited_args_digest"
    " WHERE pause_id = :pause_id AND state = 'pending' AND expires_at > :at"
    f" RETURNING {CHECKPOINT_COLUMNS}"
)
CLAIM = {
    Dialect.SQLITE: Statement(_CLAIM),
    Dialect.POSTGRESQL: Statement(
        f"{_CLAIM},"
        f" {postgres_history('symfonic_pauses.session_id', 'symfonic_pauses.base_revision')}"
        " AS history"
    ),
}


def claim_params(claim: Claim) -> dict[str, Any]:
    """The parameters of `CLAIM` for ``claim``."""
    return {
        "pause_id": claim.pause_id,
        "claim_id": claim.claim_id,
        "lease_until": claim.lease_until,
        "principal": claim.principal,
        "at": claim.at,
        "answer": json_text(claim.answer),
        "status": claim.status,
        "edited_args_digest": claim.edited_args_digest,
    }


class SqlPauseClaims(SqlTransactions):
    """The claim and its renewal, of the port's
    `PauseStore`."""

    async def claim_pause(self, claim: Claim) -> ClaimedPause | None:
        described = claimed(claim)

        def then(span: Span, row: Row | None) -> None:
            described(span, None if row is None else ClaimedPause(checkpoint_of(row), []))

        params, attributes = claim_params(claim), claim_attributes(claim)
        won = await with_history(
            self, CLAIM, params, "base_revision", "claim_pause", attributes, then
        )
        if won is None:
            return None
        row, history = won
        claimed_pause = ClaimedPause(checkpoint_of(row), history)
        self.pause_log.claimed(claim, claimed_pause)
        return claimed_pause

    async def renew_claim(self, session_id: str, claim_id: str, lease_until: datetime) -> bool:
        params = {"session_id": session_id, "claim_id": claim_id, "lease_until": lease_until}
        return await self.write_count(RENEW_CLAIM, params, "renew_claim") == 1
