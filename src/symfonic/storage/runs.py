"""Sessions and first turns: create, begin a run, end it, publish it.

A run marker is set by one conditional `UPDATE` that checks everything that could refuse
the turn, and only the run holding it may publish or record its pause.
"""

from __future__ import annotations

from datetime import UTC, datetime

from symfonic.core.contracts.errors import StoreUnavailable
from symfonic.core.contracts.sessions import RunRequest, RunStart, SessionRecord, TurnPublish
from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.core.messages import MessageBody
from symfonic.core.telemetry.store_spans import settle_attributes
from symfonic.storage.history import (
    APPEND_AFTER_BUMP,
    BUMP_ENDING_RUN_TEXT,
    CANCELLED_MARK,
    HISTORY,
    append,
    body_texts,
    history_of,
    postgres_history,
    revision_conflict,
    with_history,
)
from symfonic.storage.owed_cleanups import Kind
from symfonic.storage.rows import SESSION_COLUMNS, session_of
from symfonic.storage.statements import (
    UNSYNCED,
    UNSYNCED_COLUMN,
    Dialect,
    Statement,
    first,
    json_text,
)
from symfonic.storage.transactions import Body, Connection, SqlTransactions
from symfonic.storage.webhooks import owe_failed_turn

CREATE_SESSION = Statement(
    "INSERT INTO symfonic_sessions"
    " (session_id, principal, agent, revision, message_count, metadata, created_at, active_at)"
    " VALUES (:session_id, :principal, :agent, :revision, 0, :metadata, :created_at,"
    " :created_at)"
)
GET_SESSION = Statement(
    f"SELECT {SESSION_COLUMNS} FROM symfonic_sessions WHERE session_id = :session_id"
)

_WAITING = "state = 'pending' AND expires_at > :now"
_BEGIN_RUN = (
    "UPDATE symfonic_sessions SET run_id = :run_id, run_lease = :lease_until, active_at = :now"
    " WHERE session_id = :session_id AND (run_id IS NULL OR run_lease < :now)"
    # The casts name the parameters' types where PostgreSQL cannot infer them.
    " AND (CAST(:principal AS TEXT) IS NULL OR principal = :principal)"
    " AND (CAST(:base_revision AS INTEGER) IS NULL OR revision = :base_revision)"
    " AND NOT EXISTS (SELECT 1 FROM symfonic_pauses WHERE session_id = :session_id"
    f" AND (state = 'claimed' OR (CAST(:refuse_pending AS BOOLEAN) AND {_WAITING})))"
    f" RETURNING {SESSION_COLUMNS}, (SELECT count(*) FROM symfonic_pauses"
    f" WHERE session_id = :session_id AND {_WAITING}) AS pending"
)
# PostgreSQL: this transaction's commit does not wait for the disk.
_UNSYNCED, _UNSYNCED_COLUMN = UNSYNCED, UNSYNCED_COLUMN
BEGIN_RUN = {
    Dialect.SQLITE: Statement(_BEGIN_RUN),
    Dialect.POSTGRESQL: Statement(
        f"{_UNSYNCED} {_BEGIN_RUN}, {_UNSYNCED_COLUMN},"
        f" {postgres_history('symfonic_sessions.session_id', 'symfonic_sessions.revision')}"
        " AS history"
    ),
}
# The marker set inside a larger transaction (an interrupt's), whose commit waits for the disk.
BEGIN_RUN_SYNCED = Statement(_BEGIN_RUN)
END_RUN_TEXT = (
    "UPDATE symfonic_sessions SET run_id = NULL, run_lease = NULL"
    " WHERE session_id = :session_id AND run_id = :run_id"
)
RENEW_RUN = Statement(
    "UPDATE symfonic_sessions SET run_lease = :lease_until"
    " WHERE session_id = :session_id AND run_id = :run_id"
)
# Clearing the marker of a turn that published nothing.
END_RUN = {
    Dialect.SQLITE: Statement(END_RUN_TEXT),
    Dialect.POSTGRESQL: Statement(f"{_UNSYNCED} {END_RUN_TEXT} RETURNING {_UNSYNCED_COLUMN}"),
}
# PostgreSQL: a first turn's publish in one statement.
PUBLISH_TURN = Statement(
    f"WITH bumped AS ({BUMP_ENDING_RUN_TEXT}), {APPEND_AFTER_BUMP} SELECT revision FROM bumped"
)


class SqlSessions(SqlTransactions):
    """The port's `SessionStore`, in SQL."""

    async def create_session(self, session: SessionRecord) -> None:
        params = {
            "session_id": session.session_id,
            "principal": session.principal,
            "agent": session.agent,
            "revision": session.revision,
            "metadata": json_text(session.metadata),
            "created_at": session.created_at,
        }
        await self.write_count(CREATE_SESSION, params, "create_session")

    async def get_session(self, session_id: str) -> SessionRecord | None:
        row = first(await self.read_rows(GET_SESSION, {"session_id": session_id}, "get_session"))
        return None if row is None else session_of(row, now=datetime.now(UTC))

    async def history(self, session_id: str, up_to_revision: int) -> list[MessageBody]:
        params = {"session_id": session_id, "revision": up_to_revision}
        row = first(await self.read_rows(HISTORY[self.dialect], params, "history"))
        return [] if row is None else history_of(row["bodies"])


class SqlRuns(SqlTransactions):
    """The port's `RunStore`, in SQL."""

    async def begin_run(self, request: RunRequest) -> RunStart | None:
        params = {
            "session_id": request.session_id,
            "run_id": request.run_id,
            "now": request.now,
            "lease_until": request.lease_until,
            "principal": request.principal,
            "base_revision": request.base_revision,
            "refuse_pending": request.refuse_pending,
        }
        try:
            started = await with_history(self, BEGIN_RUN, params, "revision", "begin_run")
        except StoreUnavailable:
            # The marker may have been set with only the reply lost.
            _owe_end_run(self, request.session_id, request.run_id, None)
            raise
        if started is None:
            return None
        row, turn_history = started
        session = session_of(row, now=request.now)
        return RunStart(session, turn_history, pending_pause=int(row["pending"]) > 0)

    async def renew_run(self, session_id: str, run_id: str, lease_until: datetime) -> bool:
        """The port's `RunRenewal`."""
        params = {"session_id": session_id, "run_id": run_id, "lease_until": lease_until}
        return await self.write_count(RENEW_RUN, params, "renew_run") == 1

    async def end_run(
        self, session_id: str, run_id: str, failure: FailedTurn | None = None
    ) -> None:
        """Clear this run's marker (only this run's); retried like every cleanup.

        A turn that failed also owes ``turn.failed``, in the same transaction. A
        clear that still fails is owed by the store to its next sweep
        (`symfonic.storage.owed_cleanups`).
        """
        try:
            if failure is None:
                params = {"session_id": session_id, "run_id": run_id}
                await self.cleanup(END_RUN[self.dialect], params, "end_run")
            else:
                await self.cleanup_transaction(
                    _ending(self, session_id, run_id, failure), "end_run"
                )
        except StoreUnavailable:
            _owe_end_run(self, session_id, run_id, failure)
            raise

    async def publish_turn(self, publish: TurnPublish) -> int:
        """Append a first turn at the revision it started from, clearing its run marker."""
        session_id, base_revision, bodies = (
            publish.session_id,
            publish.base_revision,
            publish.messages,
        )
        if self.dialect is Dialect.POSTGRESQL:
            params = {
                "session_id": session_id,
                "base_revision": base_revision,
                "added": len(bodies),
                "bodies": body_texts(bodies),
                "cancelled": CANCELLED_MARK + publish.run_id,
                "run_id": publish.run_id,
            }
            row = first(
                await self.write_rows(
                    PUBLISH_TURN, params, "publish_turn", settle_attributes(session_id)
                )
            )
            if row is None:
                raise revision_conflict(session_id, base_revision)
            return int(row["revision"])

        async def bump_and_append(connection: Connection) -> int:
            return await append(
                connection, session_id, base_revision, bodies, ending_run=publish.run_id
            )

        return await self.transaction(
            bump_and_append, "publish_turn", settle_attributes(session_id)
        )


def _ending(
    store: SqlTransactions, session_id: str, run_id: str, failure: FailedTurn | None
) -> Body[int]:
    """One transaction: clear the run's marker if it still holds it, and owe its failure."""
    params = {"session_id": session_id, "run_id": run_id}

    async def end_then_owe(connection: Connection) -> int:
        cleared = await connection.count(END_RUN[store.dialect], params)
        if failure is not None:
            await owe_failed_turn(connection, failure)
        return cleared

    return end_then_owe


def _owe_end_run(
    store: SqlTransactions, session_id: str, run_id: str, failure: FailedTurn | None
) -> None:
    ending = _ending(store, session_id, run_id, failure)
    store.owed.owe(Kind.END_RUN, session_id, run_id, lambda: store.transaction(ending, "end_run"))
