"""The SQLite floor: the three commits of a cycle on the raw driver, nothing else.

One ``sqlite3`` connection, WAL, the spec's ``synchronous`` (FULL, as symfonic),
each commit one ``BEGIN IMMEDIATE`` transaction run whole on the event loop's
thread: a transaction of a few rows is tens of microseconds, less than handing it
to a worker thread would cost (symfonic's adapter runs its own the same way).
SQLite admits one writer at a time and no coroutine can run between two
statements of a transaction, so one connection is the fastest arrangement it
allows. The commits:

1. pause   — insert the pause row, the ~1.5 KB checkpoint of the in-flight turn in it
   (a table of its own would be a second B-tree to write);
2. claim   — ``UPDATE … SET state='claimed' WHERE pause_id=? AND state='pending'``;
3. publish — bump the session revision conditionally, insert the turn's four
   message rows, mark the pause published.
"""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime
from typing import Any

from bench.workloads.base import WorkloadError
from bench.workloads.floor_rows import (
    ANSWER,
    CLAIM_LEASE,
    OUTCOME,
    QUERY,
    RESPONSE_SCHEMA,
    Floor,
    FloorSession,
    PauseRow,
    checkpoint_body,
    history_json,
    turn_bodies,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS floor_sessions (
    session_id TEXT PRIMARY KEY, principal TEXT NOT NULL,
    revision INTEGER NOT NULL, message_count INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS floor_messages (
    session_id TEXT NOT NULL, seq INTEGER NOT NULL, revision INTEGER NOT NULL,
    body TEXT NOT NULL, PRIMARY KEY (session_id, seq));
CREATE TABLE IF NOT EXISTS floor_pauses (
    pause_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, principal TEXT NOT NULL,
    kind TEXT NOT NULL, query TEXT NOT NULL, response_schema TEXT NOT NULL,
    tool_call_id TEXT NOT NULL, base_revision INTEGER NOT NULL, state TEXT NOT NULL,
    created_at TEXT NOT NULL, expires_at TEXT NOT NULL, claim_id TEXT, lease_until TEXT,
    answered_by TEXT, answered_at TEXT, answer TEXT, outcome TEXT, checkpoint TEXT);
CREATE INDEX IF NOT EXISTS floor_pauses_session ON floor_pauses (session_id);
"""

INSERT_PAUSE = (
    "INSERT INTO floor_pauses (pause_id, session_id, principal, kind, query, response_schema,"
    " tool_call_id, base_revision, state, created_at, expires_at, checkpoint)"
    " VALUES (?, ?, 'bench', 'approval', ?, ?, ?, ?, 'pending', ?, ?, ?)"
)
CLAIM = (
    "UPDATE floor_pauses SET state = 'claimed', claim_id = ?, lease_until = ?,"
    " answered_by = 'bench', answered_at = ?, answer = ?"
    " WHERE pause_id = ? AND state = 'pending'"
)
BUMP_REVISION = (
    "UPDATE floor_sessions SET revision = revision + 1, message_count = message_count + ?"
    " WHERE session_id = ? AND revision = ?"
)
INSERT_MESSAGE = "INSERT INTO floor_messages (session_id, seq, revision, body) VALUES (?, ?, ?, ?)"
PUBLISH_PAUSE = (
    "UPDATE floor_pauses SET state = 'published', outcome = ?"
    " WHERE pause_id = ? AND state = 'claimed' AND claim_id = ?"
)


class SqliteFloor(Floor):
    _conn: sqlite3.Connection | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sessions: dict[str, FloorSession] = {}

    async def open(self) -> None:
        self._conn = sqlite3.connect(self.spec.location, isolation_level=None, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        if self.spec.sqlite_synchronous:
            self._conn.execute(f"PRAGMA synchronous={self.spec.sqlite_synchronous}")

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise WorkloadError("floor store is not open")
        return self._conn

    def _write(self, statements: list[tuple[str, tuple[Any, ...]]]) -> list[int]:
        """Run statements in one write transaction; return each one's rowcount."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            counts = [self.conn.execute(sql, args).rowcount for sql, args in statements]
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        return counts

    async def setup(self) -> None:
        self.conn.executescript(SCHEMA)

    async def add_sessions(self, count: int) -> list[str]:
        bodies = [b.as_dict() for b in self.spec.history]
        first = len(self._sessions)
        keys = [f"session-{index:05d}" for index in range(first, first + count)]
        self.conn.execute("BEGIN IMMEDIATE")
        for key in keys:
            self.conn.execute(
                "INSERT INTO floor_sessions VALUES (?, 'bench', 0, ?)", (key, len(bodies))
            )
            self.conn.executemany(
                INSERT_MESSAGE,
                ((key, seq, 0, history_json(body)) for seq, body in enumerate(bodies)),
            )
            self._sessions[key] = FloorSession(key, 0, len(bodies))
        self.conn.execute("COMMIT")
        return keys

    async def pause(self, session: str) -> PauseRow:
        state = self._sessions[session]
        row = PauseRow.new()
        created, expires = row.created_at.isoformat(), row.expires_at.isoformat()
        self._write(
            [
                (
                    INSERT_PAUSE,
                    (
                        row.pause_id,
                        session,
                        QUERY,
                        RESPONSE_SCHEMA,
                        row.call_id,
                        state.revision,
                        created,
                        expires,
                        checkpoint_body(row.call_id, state.revision),
                    ),
                ),
            ]
        )
        return row

    async def claim(self, row: PauseRow) -> str:
        now = datetime.now(UTC)
        claim_id = uuid.uuid4().hex
        lease = (now + CLAIM_LEASE).isoformat()
        claim_args = (claim_id, lease, now.isoformat(), ANSWER, row.pause_id)
        (claimed,) = self._write([(CLAIM, claim_args)])
        if claimed != 1:
            raise WorkloadError(f"floor claim of {row.pause_id} lost")
        return claim_id

    async def publish(self, session: str, row: PauseRow, claim_id: str) -> None:
        state = self._sessions[session]
        bodies = turn_bodies(row.call_id)
        revision = state.revision + 1
        statements: list[tuple[str, tuple[Any, ...]]] = [
            (BUMP_REVISION, (len(bodies), session, state.revision))
        ]
        statements += [
            (INSERT_MESSAGE, (session, state.message_count + i, revision, body))
            for i, body in enumerate(bodies)
        ]
        statements.append((PUBLISH_PAUSE, (OUTCOME, row.pause_id, claim_id)))
        counts = self._write(statements)
        if counts[0] != 1 or counts[-1] != 1:
            raise WorkloadError(f"floor publish on {session} lost its revision")
        state.revision, state.message_count = revision, state.message_count + len(bodies)

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None

    def versions(self) -> dict[str, str]:
        return {"sqlite": sqlite3.sqlite_version}

    def settings(self) -> dict[str, Any]:
        return {"sqlite_synchronous": self.spec.sqlite_synchronous or "default (FULL)"}
