"""Retention: deleting sessions that are finished and idle since the cutoff, checked by the
`DELETE` itself, a bounded batch per transaction (docs/storage.md).
"""

from __future__ import annotations

from datetime import datetime

from symfonic.core.contracts.retention import PruneBatch, PruneReport
from symfonic.storage.statements import Dialect, Params, Statement, first
from symfonic.storage.transactions import Connection, SqlTransactions

_FINISHED_AND_IDLE = (
    "active_at < :cutoff AND (run_id IS NULL OR run_lease < :now)"
    " AND NOT EXISTS (SELECT 1 FROM symfonic_pauses p"
    " WHERE p.session_id = symfonic_sessions.session_id"
    " AND (p.state IN ('pending', 'claimed') OR p.created_at >= :cutoff"
    " OR p.answered_at >= :cutoff))"
    # A session with a message waiting in its queue is not finished.
    " AND NOT EXISTS (SELECT 1 FROM symfonic_run_queue q"
    " WHERE q.session_id = symfonic_sessions.session_id)"
)
DELETE_SESSIONS = Statement(
    "DELETE FROM symfonic_sessions WHERE session_id IN (SELECT session_id"
    f" FROM symfonic_sessions WHERE {_FINISHED_AND_IDLE} ORDER BY active_at LIMIT :batch)"
    f" AND {_FINISHED_AND_IDLE} RETURNING session_id"
)
_CHILDREN = {
    "messages": "DELETE FROM symfonic_messages WHERE session_id IN ({ids})",
    # Who kept access to a re-addressed pause: only a pending pause's rows are read,
    # and none of a pruned session's pauses is pending, kept or not.
    "kept audiences": (
        "DELETE FROM symfonic_pause_audiences WHERE pause_id IN"
        " (SELECT pause_id FROM symfonic_pauses WHERE session_id IN ({ids}))"
    ),
    # The votes of a pause that needed several approvals: only read while it is
    # pending; who approved stays on its row (``approvals``) and in the audit trail.
    "approvals": (
        "DELETE FROM symfonic_pause_approvals WHERE pause_id IN"
        " (SELECT pause_id FROM symfonic_pauses WHERE session_id IN ({ids}))"
    ),
    "pauses": "DELETE FROM symfonic_pauses WHERE session_id IN ({ids})",
    "unanswered pauses": (
        "DELETE FROM symfonic_pauses WHERE session_id IN ({ids}) AND answered_at IS NULL"
    ),
    "checkpoints": (
        "UPDATE symfonic_pauses SET checkpoint_format = NULL, checkpoint = NULL"
        " WHERE session_id IN ({ids})"
    ),
}


_NEWEST_EVENT = "(SELECT max(id) FROM symfonic_pause_events)"
# The changes before the first one recorded at or after the cutoff, and never the
# newest. Ids and times rise together, so the subquery walks the ids from the oldest
# and stops there: it reads the rows it will delete, and needs no index on ``at``.
_BEFORE_CUTOFF = (
    "id < coalesce((SELECT id FROM symfonic_pause_events WHERE at >= :cutoff"
    f" ORDER BY id LIMIT 1), {_NEWEST_EVENT})"
)
TRIM_OLD_EVENTS = Statement(f"DELETE FROM symfonic_pause_events WHERE {_BEFORE_CUTOFF}")
# SQLite: the pages this batch freed go back to the file system (a store made
# with ``auto_vacuum=INCREMENTAL``; a no-op in a file made without it, which
# ``symfonic vacuum`` converts). Each step of the pragma frees one page, and
# the driver steps a statement that returns no columns once: it runs once a page.
AUTO_VACUUM = Statement("PRAGMA auto_vacuum")
INCREMENTAL = 2
FREE_PAGES = Statement("PRAGMA freelist_count")
RECLAIM = Statement("PRAGMA incremental_vacuum")
DELETE_DELIVERED = Statement(
    "DELETE FROM symfonic_webhook_deliveries WHERE state = 'delivered' AND delivered_at < :cutoff"
)


def _trim_events(cutoff: datetime, session_ids: list[str]) -> tuple[Statement, Params]:
    """The oldest changes: those before the cutoff, and up to the last of these sessions'."""
    if not session_ids:
        return TRIM_OLD_EVENTS, {"cutoff": cutoff}
    names = {f"s{index}": session_id for index, session_id in enumerate(session_ids)}
    ids = ", ".join(f":{name}" for name in names)
    sessions_last = f"(SELECT max(id) FROM symfonic_pause_events WHERE session_id IN ({ids}))"
    trim = (
        f"DELETE FROM symfonic_pause_events WHERE id < {_NEWEST_EVENT}"
        f" AND ({_BEFORE_CUTOFF} OR id <= {sessions_last})"
    )
    return Statement(trim), {"cutoff": cutoff, **names}


def _of_sessions(rows: str, session_ids: list[str]) -> tuple[Statement, Params]:
    """One statement over ``rows`` of these sessions (an ``IN`` list, counted by both drivers)."""
    names = {f"s{index}": session_id for index, session_id in enumerate(session_ids)}
    ids = ", ".join(f":{name}" for name in names)
    return Statement(_CHILDREN[rows].format(ids=ids)), names


async def _reclaim(connection: Connection) -> None:
    mode = first(await connection.rows(AUTO_VACUUM, {}))
    if mode is None or int(mode["auto_vacuum"]) != INCREMENTAL:
        return  # the free pages stay in the file, for its own reuse
    row = first(await connection.rows(FREE_PAGES, {}))
    free = 0 if row is None else int(row["freelist_count"])
    if free:
        await connection.each(RECLAIM, [{}] * free)


class SqlRetention(SqlTransactions):
    """The port's `RetentionStore`, in SQL."""

    async def prune(self, batch: PruneBatch) -> PruneReport:
        """Delete up to ``batch.batch`` finished sessions idle since the cutoff, in one
        transaction."""
        params = {"cutoff": batch.cutoff, "now": batch.now, "batch": batch.batch}

        async def delete(connection: Connection) -> PruneReport:
            deleted = await connection.rows(DELETE_SESSIONS, params)
            sessions = [str(row["session_id"]) for row in deleted]
            await connection.count(*_trim_events(batch.cutoff, sessions))
            await connection.count(DELETE_DELIVERED, {"cutoff": batch.cutoff})
            if not sessions:
                return PruneReport(sessions=0, messages=0, pauses=0)
            messages = await connection.count(*_of_sessions("messages", sessions))
            await connection.count(*_of_sessions("kept audiences", sessions))
            await connection.count(*_of_sessions("approvals", sessions))
            if batch.keep_answered:
                pauses = await connection.count(*_of_sessions("unanswered pauses", sessions))
                await connection.count(*_of_sessions("checkpoints", sessions))
            else:
                pauses = await connection.count(*_of_sessions("pauses", sessions))
            if self.dialect is Dialect.SQLITE:
                await _reclaim(connection)
            return PruneReport(sessions=len(sessions), messages=messages, pauses=pauses)

        return await self.background_transaction(delete, "prune")
