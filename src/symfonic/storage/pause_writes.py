"""A pause's transitions: record, claim, renew, publish, abandon, expire.

Every transition two workers can race for is one conditional ``UPDATE`` whose
row count (or ``RETURNING`` row) decides it, never a read followed by a write:

- claim: ``pending`` and unexpired → ``claimed``, keyed by the pause id;
- renew, abandon, supersede, publish: only while ``claimed`` by *this* claim id;
- publish also moves the session's revision on only from the pause's base
  revision, in the same transaction that appends the history rows, so a lost
  race raises :class:`RevisionConflict` and rolls the pause update back with it;
- sweep: ``pending`` past ``expires_at`` → ``expired``, ``claimed`` past its
  lease → ``abandoned``, skipping rows another transaction holds.

Where a transition writes more than one row, PostgreSQL makes it one statement
of data-modifying ``WITH`` clauses -- one round trip, where a transaction of
several statements costs one per statement plus ``BEGIN`` and ``COMMIT`` -- and
SQLite, which has no such clauses, one transaction of the same steps, each
written beside the other below. One statement commits whole or not at all,
exactly as the transaction does, and its conditions are the transaction's.
Publishing a resumed turn must not mark its pause published unless the session
is still at the pause's base revision; the clauses of one statement all read one
snapshot, so PostgreSQL's first locks the claimed pause and the session row
(``FOR UPDATE``, which under READ COMMITTED waits for a concurrent writer and
then reads its commit): the revision it compares is then the newest, and no
other publisher can move it before this statement commits.

A settled pause's turn is in the session's history (published) or in the pause
that replaced it (superseded): its checkpoint is dropped as it settles.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from symfonic.core.contracts.errors import PauseAbandoned, RevisionConflict, StoreUnavailable
from symfonic.core.contracts.pauses import (
    Claim,
    ClaimedPause,
    NewPause,
    ResumePublish,
    SweepReport,
)
from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.storage.history import (
    APPEND_AFTER_BUMP,
    append,
    body_texts,
    postgres_history,
    revision_conflict,
    with_history,
)
from symfonic.storage.owed import Kind
from symfonic.storage.readdressing import escalate_due, first_step_at
from symfonic.storage.rows import CHECKPOINT_COLUMNS, checkpoint_of, escalations_json
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

_CLAIMED_BY = "WHERE session_id = :session_id AND claim_id = :claim_id AND state = 'claimed'"
_DROP_CHECKPOINT = "checkpoint_format = NULL, checkpoint = NULL"
SUPERSEDE = Statement(
    f"UPDATE symfonic_pauses SET state = 'superseded', outcome = :outcome, {_DROP_CHECKPOINT}"
    f" {_CLAIMED_BY} RETURNING pause_id"
)
RENEW_CLAIM = Statement(f"UPDATE symfonic_pauses SET lease_until = :lease_until {_CLAIMED_BY}")
ABANDON_CLAIM = Statement(f"UPDATE symfonic_pauses SET state = 'abandoned' {_CLAIMED_BY}")
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

# SQLite: the pause marked published, then the turn appended at its base revision.
PUBLISH_PAUSE = Statement(
    f"UPDATE symfonic_pauses SET state = 'published', outcome = :outcome, {_DROP_CHECKPOINT}"
    f" {_CLAIMED_BY} RETURNING pause_id, base_revision"
)
# PostgreSQL: the same in one statement. Whatever it did not do is reported in
# its one row: no ``base_revision``, the claim lapsed; no ``revision``, the
# session had moved on.
PUBLISH_RESUME = Statement(
    "WITH claimed AS (SELECT pause_id, base_revision FROM symfonic_pauses"
    f" {_CLAIMED_BY} FOR UPDATE),"
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

# Pauses a sweep moves in one transaction: a long backlog (10k pauses expiring at
# once) becomes many short transactions, so turns' writes interleave with it. On
# SQLite a write that comes during a batch waits for it: 100 take about 10 ms
# on a quiet machine.
SWEEP_BATCH = 100


def _stale(dialect: Dialect, new_state: str, state: str, due_by: str) -> Statement:
    """One batch of ``state`` pauses whose ``due_by`` time has come moved to ``new_state``.

    The batch is picked once through the index on ``(state, due_by)``, then its
    rows are updated by primary key. The update's own check that each row is
    still due (what makes two sweepers move a pause once) is written so that no
    index serves it: only the batch's keys can find the rows, and a batch costs
    its own rows whatever the statistics say. Were the update matched on the due
    index too, each batch would read every pause due, and on a PostgreSQL table
    never analysed would join them to the batch row by row (4,000 due: 400,000
    comparisons a batch).

    PostgreSQL builds the batch as an array, skipping rows another transaction
    holds: a ``LIMIT … FOR UPDATE SKIP LOCKED`` subquery under ``IN`` may be run
    again for each row and move more than a batch. SQLite's writers never
    overlap, and it runs an ``IN`` subquery once.
    """
    batch = f"SELECT pause_id FROM symfonic_pauses WHERE state = '{state}' AND {due_by} <= :now"
    still_due = f"coalesce(state, state) = '{state}' AND coalesce({due_by}, {due_by}) <= :now"
    update = f"UPDATE symfonic_pauses SET state = '{new_state}' WHERE"
    if dialect is Dialect.POSTGRESQL:
        return Statement(
            f"{update} pause_id = ANY(ARRAY({batch} LIMIT :batch FOR UPDATE SKIP LOCKED))"
            f" AND {still_due}"
        )
    return Statement(f"{update} pause_id IN ({batch} LIMIT :batch) AND {still_due}")


EXPIRE = {d: _stale(d, "expired", "pending", "expires_at") for d in Dialect}
ABANDON_LAPSED = {d: _stale(d, "abandoned", "claimed", "lease_until") for d in Dialect}


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
    """The transitions of the port's :class:`~symfonic.core.contracts.pauses.PauseStore`."""

    async def record_pause(self, new: NewPause) -> None:
        session_id = new.pause.session_id
        if new.supersedes is None and new.run_id is None:
            await self.write_count(INSERT_PAUSE, _pause_params(new, None))
            return
        if new.supersedes is None and self.dialect is Dialect.POSTGRESQL:
            params = {**_pause_params(new, None), "run_id": new.run_id}
            row = first(await self.write_rows(RECORD_RUN_PAUSE, params))
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

        await self.transaction(end_run_then_insert)

    async def claim_pause(self, claim: Claim) -> ClaimedPause | None:
        won = await with_history(self, CLAIM, claim_params(claim), "base_revision")
        if won is None:
            return None
        row, history = won
        return ClaimedPause(checkpoint_of(row), history)

    async def renew_claim(self, session_id: str, claim_id: str, lease_until: datetime) -> bool:
        params = {"session_id": session_id, "claim_id": claim_id, "lease_until": lease_until}
        return await self.write_count(RENEW_CLAIM, params) == 1

    async def publish_resume(self, publish: ResumePublish) -> int:
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
            (row,) = await self.write_rows(PUBLISH_RESUME, params)
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

        return await self.transaction(publish_then_append)

    async def abandon_claim(
        self, session_id: str, claim_id: str, failure: FailedTurn | None = None
    ) -> bool:
        """Move this claim's pause to ``abandoned``; false if it already left ``claimed``.

        A failed turn's cleanup: retried while the store is briefly unavailable; if
        it still cannot be written, the store owes it and every sweep tries it again
        (:mod:`symfonic.storage.owed`), so the pause does not stay ``claimed`` for
        the rest of its lease. A turn that failed also owes ``turn.failed``, in the
        same transaction.
        """
        params = {"session_id": session_id, "claim_id": claim_id}

        async def abandon_then_owe(connection: Connection) -> bool:
            abandoned = await connection.count(ABANDON_CLAIM, params)
            if failure is not None:
                await owe_failed_turn(connection, failure)
            return abandoned == 1

        try:
            if failure is None:
                return await self.cleanup(ABANDON_CLAIM, params) == 1
            return await self.cleanup_transaction(abandon_then_owe)
        except StoreUnavailable:

            async def abandon_later() -> int:
                return int(await self.transaction(abandon_then_owe))

            self.owed.owe(Kind.ABANDON, session_id, claim_id, abandon_later)
            raise

    async def abandon_pending(self, session_id: str) -> int:
        return len(await self.write_rows(ABANDON_PENDING, {"session_id": session_id}))

    async def sweep(self, now: datetime) -> SweepReport:
        """Expire stale pending pauses and abandon claims whose lease ran out, after
        writing the cleanups owed since the store could not (:mod:`symfonic.storage.owed`)
        and applying the escalation steps due (:mod:`symfonic.storage.readdressing`).

        Rows another transaction holds (a claim being won, a lease being renewed, a
        publish) are skipped rather than waited for: a sweep never blocks a turn,
        and sweepers on many workers never deadlock on each other. Each batch of at
        most ``SWEEP_BATCH`` pauses is a transaction of its own, run where the
        adapter keeps long work (:meth:`SqlTransactions.background_transaction`), and
        each finds its rows through the index of the pauses due, so a pass costs
        what it moves, not what waits.
        """
        # Cleanups owed since the store could not write go first: a failed turn's
        # claim or session is released within one sweep of writes working again.
        settled = await self.owed.settle()
        # Escalation before expiry: a step due now is applied while its pause is pending.
        escalated = await escalate_due(self, now)
        expired = await _in_batches(self, EXPIRE[self.dialect], now)
        abandoned = await _in_batches(self, ABANDON_LAPSED[self.dialect], now)
        return SweepReport(
            expired,
            abandoned,
            runs_ended=settled[Kind.END_RUN],
            escalated=len(escalated),
            escalations=tuple(escalated),
        )


async def _in_batches(store: SqlTransactions, statement: Statement, now: datetime) -> int:
    params = {"now": now, "batch": SWEEP_BATCH}

    async def one_batch(connection: Connection) -> int:
        return await connection.count(statement, params)

    moved = 0
    while True:
        count = await store.background_transaction(one_batch)
        moved += count
        if count < SWEEP_BATCH:
            return moved


def claim_params(claim: Claim) -> dict[str, Any]:
    """The parameters of :data:`CLAIM` for ``claim``."""
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
