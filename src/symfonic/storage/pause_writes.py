"""A pause's record and settlement.
Every settlement two workers can race for is one conditional `UPDATE` on this claim id;
a publish also moves the revision only from the pause's base, or raises
`RevisionConflict` and rolls back.
"""

from __future__ import annotations

from typing import Any

from symfonic.core.contracts.errors import PauseAbandoned, RevisionConflict, StoreUnavailable
from symfonic.core.contracts.pauses import NewPause, ResumePublish
from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.core.telemetry import logs
from symfonic.core.telemetry.store_spans import pause_attributes, settle_attributes, with_trace
from symfonic.storage.history import APPEND_AFTER_BUMP, append, body_texts, revision_conflict
from symfonic.storage.owed_cleanups import Kind
from symfonic.storage.pause_claims import CLAIMED_BY
from symfonic.storage.readdressing import first_step_at
from symfonic.storage.rows import escalations_json
from symfonic.storage.runs import END_RUN, END_RUN_TEXT
from symfonic.storage.statements import Dialect, Statement, first, json_text
from symfonic.storage.transactions import Connection, SqlTransactions
from symfonic.storage.webhooks import owe_failed_turn

_COLUMNS = (
    "pause_id, session_id, principal, agent, audience, kind, query, response_schema,"
    " tool_call_id, interrupt_id, base_revision, state, created_at, expires_at, supersedes,"
    " checkpoint_format, checkpoint, parent_session_id, delegated_pause_id, sub_agent,"
    " args_digest, escalations, escalate_at, approvals_required, allow_requester, server"
)
_VALUES = (
    ":pause_id, :session_id, :principal, :agent, :audience, :kind, :query, :response_schema,"
    " :tool_call_id, :interrupt_id, :base_revision, 'pending', :created_at, :expires_at,"
    " :supersedes, :checkpoint_format, :checkpoint, :parent_session_id, :delegated_pause_id,"
    " :sub_agent, :args_digest, :escalations, :escalate_at, :approvals_required,"
    " :allow_requester, :server"
)
INSERT_PAUSE = Statement(f"INSERT INTO symfonic_pauses ({_COLUMNS}) VALUES ({_VALUES})")
# SQLite: the run's marker cleared with END_RUN (row count 1: the run held it), then
# INSERT_PAUSE. PostgreSQL: the same in one statement; the insert reads its one row from ``ended``.
RECORD_RUN_PAUSE = Statement(
    f"WITH ended AS ({END_RUN_TEXT} RETURNING session_id),"
    f" pause AS (INSERT INTO symfonic_pauses ({_COLUMNS}) SELECT {_VALUES} FROM ended)"
    " SELECT count(*) AS recorded FROM ended"
)

_DROP_CHECKPOINT = "checkpoint_format = NULL, checkpoint = NULL"
SUPERSEDE = Statement(
    f"UPDATE symfonic_pauses SET state = 'superseded', outcome = :outcome, {_DROP_CHECKPOINT}"
    f" {CLAIMED_BY} RETURNING pause_id"
)
ABANDON_CLAIM = Statement(f"UPDATE symfonic_pauses SET state = 'abandoned' {CLAIMED_BY}")
# The session's pending pause and, down the chain of delegates, the pending
# pauses it stands for: in one statement, so none is left answerable alone.
ABANDON_PENDING = Statement(
    "WITH RECURSIVE chain (pause_id) AS ("
    " SELECT delegated_pause_id FROM symfonic_pauses"
    " WHERE session_id = :session_id AND state = 'pending' AND delegated_pause_id IS NOT NULL"
    " UNION SELECT p.delegated_pause_id FROM symfonic_pauses p JOIN chain c"
    " ON p.pause_id = c.pause_id WHERE p.delegated_pause_id IS NOT NULL)"
    # The session's own pauses and the chain's, each found by its key. Neither an
    # OR of the two nor the plain ``state`` test may reach an index led by
    # ``state`` (every pending pause): ``state || ''``, which no index holds,
    # keeps the test to the rows found.
    " UPDATE symfonic_pauses SET state = 'abandoned'"
    " WHERE state || '' = 'pending' AND pause_id IN"
    " (SELECT pause_id FROM symfonic_pauses WHERE session_id = :session_id AND state = 'pending'"
    " UNION SELECT pause_id FROM chain)"
    # Counted from the rows it returns: SQLite reports no row count for a WITH statement.
    " RETURNING pause_id"
)

# SQLite: the pause marked published, then the turn appended at its base revision.
PUBLISH_PAUSE = Statement(
    f"UPDATE symfonic_pauses SET state = 'published', outcome = :outcome, {_DROP_CHECKPOINT}"
    f" {CLAIMED_BY} RETURNING pause_id, base_revision"
)
# PostgreSQL: the same in one statement. Whatever it did not do is reported in
# its one row: no ``base_revision``, the claim lapsed; no ``revision``, the
# session had moved on.
PUBLISH_RESUME = Statement(
    "WITH claimed AS (SELECT pause_id, base_revision FROM symfonic_pauses"
    f" {CLAIMED_BY} FOR UPDATE),"
    " locked AS (SELECT revision FROM symfonic_sessions WHERE session_id = :session_id"
    " FOR UPDATE),"
    " published AS (UPDATE symfonic_pauses"
    f" SET state = 'published', outcome = :outcome, {_DROP_CHECKPOINT}"
    " FROM claimed, locked WHERE symfonic_pauses.pause_id = claimed.pause_id"
    " AND locked.revision = claimed.base_revision RETURNING symfonic_pauses.pause_id),"
    " bumped AS (UPDATE symfonic_sessions"
    " SET revision = revision + 1, message_count = message_count + :added"
    " WHERE session_id = :session_id AND EXISTS (SELECT 1 FROM published)"
    " RETURNING revision, message_count),"
    f" {APPEND_AFTER_BUMP}"
    " SELECT (SELECT revision FROM bumped) AS revision,"
    " (SELECT base_revision FROM claimed) AS base_revision"
)


def run_lost(session_id: str) -> RevisionConflict:
    return RevisionConflict(
        f"this turn's hold on session {session_id} lapsed while it ran and another turn "
        "may have started; nothing was recorded",
        session_id=session_id,
    )


def claim_lapsed(claim_id: str) -> PauseAbandoned:
    return PauseAbandoned("this resume's claim lapsed before it could publish", claim_id=claim_id)


def _pause_params(new: NewPause, supersedes: str | None) -> dict[str, Any]:
    """The parameters of a pending pause row's insert, its checkpoint with it."""
    pause, checkpoint = new.pause, new.checkpoint
    if (checkpoint.pause_id, checkpoint.session_id, checkpoint.base_revision) != (
        pause.pause_id,
        pause.session_id,
        pause.base_revision,
    ):
        raise ValueError(f"checkpoint {checkpoint.pause_id} is not pause {pause.pause_id}'s turn")
    return {
        "pause_id": pause.pause_id,
        "session_id": pause.session_id,
        "principal": pause.principal,
        "agent": pause.agent,
        "audience": pause.audience,
        "kind": pause.kind.value,
        "query": pause.query,
        "response_schema": json_text(pause.response_schema),
        "tool_call_id": pause.tool_call_id,
        "interrupt_id": pause.interrupt_id,
        "base_revision": pause.base_revision,
        "created_at": pause.created_at,
        "expires_at": pause.expires_at,
        "supersedes": supersedes,
        "checkpoint_format": checkpoint.format_version,
        "checkpoint": json_text(checkpoint.body),
        "parent_session_id": pause.parent_session_id,
        "delegated_pause_id": pause.delegated_pause_id,
        "sub_agent": pause.sub_agent,
        "args_digest": pause.args_digest,
        "escalations": json_text(escalations_json(pause.escalations)),
        "escalate_at": first_step_at(pause),
        "approvals_required": pause.approvals_required,
        "allow_requester": pause.allow_requester,
        "server": pause.server,
    }


class SqlPauseWrites(SqlTransactions):
    """The record and settlements of the port's
    `PauseStore`."""

    async def record_pause(self, new: NewPause) -> None:
        if self.traced:
            new = with_trace(new)
        await self._record(new, pause_attributes(new))
        self.pause_log.recorded(new)

    async def _record(self, new: NewPause, attributes: dict[str, Any]) -> None:
        session_id = new.pause.session_id
        if new.supersedes is None and new.run_id is None:
            await self.write_count(
                INSERT_PAUSE, _pause_params(new, None), "record_pause", attributes
            )
            return
        if new.supersedes is None and self.dialect is Dialect.POSTGRESQL:
            params = {**_pause_params(new, None), "run_id": new.run_id}
            row = first(await self.write_rows(RECORD_RUN_PAUSE, params, "record_pause", attributes))
            if row is None or row["recorded"] != 1:
                raise run_lost(session_id)
            return

        async def end_run_then_insert(connection: Connection) -> None:
            replaced: str | None = None
            if new.run_id is not None:
                # Only the run that holds the session may record its pause: one whose
                # marker lapsed (or was lost) while it ran records nothing.
                ending = {"session_id": session_id, "run_id": new.run_id}
                if await connection.count(END_RUN[Dialect.SQLITE], ending) != 1:
                    raise run_lost(session_id)
            if new.supersedes is not None:
                outcome = json_text({"status": "paused", "pause_id": new.pause.pause_id})
                superseding = {
                    "session_id": session_id,
                    "claim_id": new.supersedes,
                    "outcome": outcome,
                }
                row = first(await connection.rows(SUPERSEDE, superseding))
                if row is None:
                    raise PauseAbandoned(
                        "the claim this turn resumed was lost before its second pause "
                        "could be recorded",
                        claim_id=new.supersedes,
                    )
                replaced = row["pause_id"]
            await connection.count(INSERT_PAUSE, _pause_params(new, replaced))

        await self.transaction(end_run_then_insert, "record_pause", attributes)

    async def publish_resume(self, publish: ResumePublish) -> int:
        revision = await self._publish(publish, settle_attributes(publish.session_id))
        self.pause_log.published(publish.session_id, publish.claim_id, revision)
        return revision

    async def _publish(self, publish: ResumePublish, attributes: dict[str, Any]) -> int:
        session_id, claim_id, bodies = publish.session_id, publish.claim_id, publish.messages
        outcome = json_text({"status": "complete", "answer": publish.answer})
        if self.dialect is Dialect.POSTGRESQL:
            params = {
                "session_id": session_id,
                "claim_id": claim_id,
                "outcome": outcome,
                "added": len(bodies),
                "bodies": body_texts(bodies),
            }
            (row,) = await self.write_rows(PUBLISH_RESUME, params, "publish_resume", attributes)
            if row["base_revision"] is None:
                raise claim_lapsed(claim_id)
            if row["revision"] is None:
                raise revision_conflict(session_id, int(row["base_revision"]))
            return int(row["revision"])

        async def publish_then_append(connection: Connection) -> int:
            params = {"session_id": session_id, "claim_id": claim_id, "outcome": outcome}
            row = first(await connection.rows(PUBLISH_PAUSE, params))
            if row is None:
                raise claim_lapsed(claim_id)
            # A revision conflict raised here rolls the pause update back with it.
            return await append(connection, session_id, int(row["base_revision"]), bodies)

        return await self.transaction(publish_then_append, "publish_resume", attributes)

    async def abandon_claim(
        self, session_id: str, claim_id: str, failure: FailedTurn | None = None
    ) -> bool:
        """Move this claim's pause to ``abandoned``; false if it already left ``claimed``.

        A failed turn's cleanup: retried while the store is briefly unavailable; if
        it still cannot be written, the store owes it and every sweep tries it again
        (`symfonic.storage.owed_cleanups`), so the pause does not stay ``claimed`` for
        the rest of its lease. A turn that failed also owes ``turn.failed``, in the
        same transaction.
        """
        params = {"session_id": session_id, "claim_id": claim_id}
        attributes = settle_attributes(session_id)

        async def abandon_then_owe(connection: Connection) -> bool:
            abandoned = await connection.count(ABANDON_CLAIM, params)
            if failure is not None:
                await owe_failed_turn(connection, failure)
            return abandoned == 1

        try:
            if failure is None:
                abandoned = (
                    await self.cleanup(ABANDON_CLAIM, params, "abandon_claim", attributes) == 1
                )
            else:
                abandoned = await self.cleanup_transaction(
                    abandon_then_owe, "abandon_claim", attributes
                )
        except StoreUnavailable:

            async def abandon_later() -> int:
                return int(await self.transaction(abandon_then_owe, "abandon_claim"))

            self.owed.owe(Kind.ABANDON, session_id, claim_id, abandon_later)
            raise
        self.pause_log.abandoned(session_id, claim_id, abandoned)
        return abandoned

    async def abandon_pending(self, session_id: str) -> int:
        params = {"session_id": session_id}
        attributes = settle_attributes(session_id)
        count = len(await self.write_rows(ABANDON_PENDING, params, "abandon_pending", attributes))
        logs.pending_abandoned(session_id, count)
        return count
