"""A session's queued messages in SQL.

Taking the head is one transaction whose first statement is a conditional `UPDATE` of
the session's row, so of any number of workers one takes it, and only the head.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from symfonic.core.contracts.run_events import CANCELLED
from symfonic.core.contracts.run_queue import QueuedTurn, QueueHead, TakenTurn
from symfonic.core.contracts.sessions import RunStart
from symfonic.storage.history import read_history
from symfonic.storage.rows import SESSION_COLUMNS, aware, session_of
from symfonic.storage.run_events import INSERT_EVENT, NOTIFY, event_row
from symfonic.storage.statements import (
    Dialect,
    Row,
    Statement,
    first,
    json_text,
    json_value,
)
from symfonic.storage.transactions import Connection, SqlTransactions

# How often a take is asked again when a cancel removed the head it chose.
TAKE_ATTEMPTS = 3

QUEUE_RUN = Statement(
    "INSERT INTO symfonic_runs (run_id, session_id, principal, state, created_at, lease_until,"
    " events, dropped) VALUES (:run_id, :session_id, :owner, 'queued', :at, :at, 0, 0)"
)
QUEUE_MESSAGE = Statement(
    "INSERT INTO symfonic_run_queue (run_id, session_id, principal, scopes, message,"
    " on_pending_pause, queued_at) VALUES (:run_id, :session_id, :principal, :scopes,"
    " :message, :on_pending_pause, :at)"
)
_HEAD = (
    "(SELECT q.{column} FROM symfonic_run_queue q WHERE q.session_id = :session_id"
    " ORDER BY q.position LIMIT 1)"
)
_WAITING = "state = 'pending' AND expires_at > :now"
# The claim: the session held by its queue's head, while nothing else holds it.
TAKE_HEAD = Statement(
    f"UPDATE symfonic_sessions SET run_id = {_HEAD.format(column='run_id')},"
    " run_lease = :lease_until, active_at = :now"
    " WHERE session_id = :session_id AND (run_id IS NULL OR run_lease < :now)"
    " AND EXISTS (SELECT 1 FROM symfonic_run_queue WHERE session_id = :session_id)"
    " AND NOT EXISTS (SELECT 1 FROM symfonic_pauses WHERE session_id = :session_id"
    f" AND (state = 'claimed' OR ({_WAITING}"
    f" AND {_HEAD.format(column='on_pending_pause')} = 'reject')))"
    f" RETURNING {SESSION_COLUMNS}, (SELECT count(*) FROM symfonic_pauses"
    f" WHERE session_id = :session_id AND {_WAITING}) AS pending"
)
TAKE_MESSAGE = Statement(
    "DELETE FROM symfonic_run_queue WHERE run_id = :run_id"
    " RETURNING run_id, session_id, principal, scopes, message, on_pending_pause, queued_at"
)
RUN_TAKEN = Statement(
    "UPDATE symfonic_runs SET state = 'running', lease_until = :lease_until"
    " WHERE run_id = :run_id AND state = 'queued' RETURNING principal, events"
)
ANY_QUEUED = Statement(
    "SELECT 1 AS queued FROM symfonic_run_queue WHERE session_id = :session_id LIMIT 1"
)
DROP_MESSAGE = Statement("DELETE FROM symfonic_run_queue WHERE run_id = :run_id")
CANCEL_QUEUED = Statement(
    "UPDATE symfonic_runs SET state = 'cancelled', ended_at = :at, events = events + 1"
    " WHERE run_id = :run_id AND state = 'queued' RETURNING events"
)
# A first turn handed back keeps only its `turn.started`; below every queued message.
REQUEUE_RUN = Statement(
    "UPDATE symfonic_runs SET state = 'queued', lease_until = :at"
    " WHERE run_id = :run_id AND state = 'running' AND events = 1"
)
REQUEUE_MESSAGE = Statement(
    "INSERT INTO symfonic_run_queue (position, run_id, session_id, principal, scopes, message,"
    " on_pending_pause, queued_at) VALUES ((SELECT coalesce(min(position), 1) - 1"
    " FROM symfonic_run_queue), :run_id, :session_id, :principal, :scopes, :message,"
    " :on_pending_pause, :at)"
)
FREE_HEADS = Statement(
    "SELECT q.session_id, q.run_id, s.run_id IS NOT NULL AS lapsed FROM symfonic_run_queue q"
    " JOIN symfonic_sessions s ON s.session_id = q.session_id"
    " WHERE q.position = (SELECT min(h.position) FROM symfonic_run_queue h"
    " WHERE h.session_id = q.session_id) AND (s.run_id IS NULL OR s.run_lease < :now)"
    " AND NOT EXISTS (SELECT 1 FROM symfonic_pauses p WHERE p.session_id = q.session_id"
    " AND p.state = 'claimed') ORDER BY q.position LIMIT :limit"
)

HAND_OVER = Statement(
    f"UPDATE symfonic_sessions SET run_id = {_HEAD.format(column='run_id')}, run_lease = :now"
    " WHERE session_id = :session_id AND run_id IS NULL"
    " AND EXISTS (SELECT 1 FROM symfonic_run_queue WHERE session_id = :session_id)"
)


class _Gone(Exception):
    """The head a take chose was cancelled first: its transaction rolls back."""


def queued_of(row: Row, owner: str) -> QueuedTurn:
    queued_at = aware(row["queued_at"])
    assert queued_at is not None
    return QueuedTurn(
        run_id=str(row["run_id"]),
        session_id=str(row["session_id"]),
        owner=owner,
        principal=str(row["principal"]),
        scopes=frozenset(json_value(row["scopes"]) or ()),
        message=str(row["message"]),
        on_pending_pause=row["on_pending_pause"],
        queued_at=queued_at,
    )


def _params(turn: QueuedTurn) -> dict[str, object]:
    return {
        "run_id": turn.run_id,
        "session_id": turn.session_id,
        "owner": turn.owner,
        "principal": turn.principal,
        "scopes": json_text(sorted(turn.scopes)),
        "message": turn.message,
        "on_pending_pause": turn.on_pending_pause,
        "at": turn.queued_at,
    }


class SqlRunQueue(SqlTransactions):
    """The port's `RunQueue`, in SQL."""

    async def enqueue_turn(self, turn: QueuedTurn) -> None:
        params = _params(turn)

        async def enqueue(connection: Connection) -> None:
            await connection.count(QUEUE_RUN, params)
            await connection.count(QUEUE_MESSAGE, params)

        await self.transaction(enqueue, "enqueue_turn")

    async def take_queued_turn(
        self, session_id: str, now: datetime, lease_until: datetime
    ) -> TakenTurn | None:
        params = {"session_id": session_id, "now": now, "lease_until": lease_until}
        # Every turn's end asks: a read, not a write, when nothing is queued.
        if not await self.read_rows(ANY_QUEUED, {"session_id": session_id}, "take_queued_turn"):
            return None

        async def take(connection: Connection) -> TakenTurn | None:
            held = first(await connection.rows(TAKE_HEAD, params))
            if held is None:
                return None
            taken = {"run_id": held["run_id"], "lease_until": lease_until}
            message = first(await connection.rows(TAKE_MESSAGE, taken))
            run = first(await connection.rows(RUN_TAKEN, taken))
            if message is None or run is None:
                raise _Gone
            session = session_of(held, now=now)
            history = await read_history(connection, self.dialect, session_id, session.revision)
            start = RunStart(session, history, pending_pause=int(held["pending"]) > 0)
            turn = queued_of(message, str(run["principal"]))
            return TakenTurn(turn, start, kept=int(run["events"]))

        for _ in range(TAKE_ATTEMPTS):
            try:
                return await self.transaction(take, "take_queued_turn")
            except _Gone:
                continue
        return None

    async def cancel_queued_turn(self, run_id: str, at: datetime) -> bool:
        async def cancel(connection: Connection) -> bool:
            if await connection.count(DROP_MESSAGE, {"run_id": run_id}) != 1:
                return False
            row = first(await connection.rows(CANCEL_QUEUED, {"run_id": run_id, "at": at}))
            seq = 1 if row is None else int(row["events"])
            await connection.each(INSERT_EVENT, [event_row(run_id, seq, CANCELLED)])
            if self.dialect is Dialect.POSTGRESQL:
                await connection.rows(NOTIFY, {"run_id": run_id})
            return True

        return await self.transaction(cancel, "cancel_queued_turn")

    async def free_queue_heads(self, now: datetime, limit: int) -> list[QueueHead]:
        rows = await self.read_rows(FREE_HEADS, {"now": now, "limit": limit}, "free_queue_heads")
        return [
            QueueHead(str(row["session_id"]), str(row["run_id"]), bool(row["lapsed"]))
            for row in rows
        ]

    async def requeue_turn(self, turn: QueuedTurn, now: datetime) -> bool:
        params = _params(turn)

        async def requeue(connection: Connection) -> bool:
            if await connection.count(REQUEUE_RUN, {"run_id": turn.run_id, "at": now}) != 1:
                return False
            await connection.count(REQUEUE_MESSAGE, params)
            await connection.count(HAND_OVER, {"session_id": turn.session_id, "now": now})
            return True

        return await self.transaction(requeue, "requeue_turn")

    async def hand_over_queues(self, session_ids: Sequence[str], now: datetime) -> int:
        async def hand_over(connection: Connection) -> int:
            return sum(
                [
                    await connection.count(HAND_OVER, {"session_id": session_id, "now": now})
                    for session_id in session_ids
                ]
            )

        return await self.transaction(hand_over, "hand_over_queues") if session_ids else 0
