"""The floor: a database doing only the three commits a cycle cannot avoid, nothing else.

1. pause   — insert the pause row, with a ~1.5 KB checkpoint of the in-flight turn
   in it (a table of its own would be a second B-tree to write);
2. claim   — ``UPDATE … SET state='claimed' WHERE pause_id=… AND state='pending'``;
3. publish — bump the session's revision conditionally, insert the turn's four
   message rows, mark the pause published.

The rows are as large as a real cycle's (the columns an auditable pause needs, a
checkpoint of the size symfonic keeps), or it would be a floor nobody can reach.
Each store commits the fastest way it allows: SQLite on one ``sqlite3``
connection, each commit one ``BEGIN IMMEDIATE`` transaction run whole on the
event loop's thread (SQLite admits one writer at a time, and a transaction of a
few rows costs less than a hand-off to a thread); PostgreSQL on an asyncpg pool
sized to the concurrency, each commit one statement (data-modifying ``WITH``
clauses), so one round trip and one commit.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, message_to_dict

from bench.history import FINAL_ANSWER, TOOL_ARGS, TOOL_NAME, TOOL_RESULT, USER_MESSAGE
from bench.workloads.base import Workload, WorkloadError, WorkloadSpec

CHECKPOINT_BYTES = 1536
PAUSE_TTL = timedelta(hours=24)
CLAIM_LEASE = timedelta(minutes=5)

RESPONSE_SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {
            "decision": {"enum": ["approve", "edit", "reject"]},
            "args": {"type": "object"},
            "reason": {"type": "string"},
        },
        "required": ["decision"],
    }
)
QUERY = f"Approve {TOOL_NAME} with {json.dumps(TOOL_ARGS)}?"
ANSWER = json.dumps({"decision": "approve"})
OUTCOME = json.dumps({"answer": FINAL_ANSWER, "status": "complete"})

# {json} and {time}: each store's types for JSON bodies and timestamps.
SCHEMA = """
CREATE TABLE IF NOT EXISTS floor_sessions (
    session_id TEXT PRIMARY KEY, principal TEXT NOT NULL,
    revision INTEGER NOT NULL, message_count INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS floor_messages (
    session_id TEXT NOT NULL, seq INTEGER NOT NULL, revision INTEGER NOT NULL,
    body {json} NOT NULL, PRIMARY KEY (session_id, seq));
CREATE TABLE IF NOT EXISTS floor_pauses (
    pause_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, principal TEXT NOT NULL,
    kind TEXT NOT NULL, query TEXT NOT NULL, response_schema {json} NOT NULL,
    tool_call_id TEXT NOT NULL, base_revision INTEGER NOT NULL, state TEXT NOT NULL,
    created_at {time} NOT NULL, expires_at {time} NOT NULL, claim_id TEXT,
    lease_until {time}, answered_by TEXT, answered_at {time}, answer {json},
    outcome {json}, checkpoint {json});
CREATE INDEX IF NOT EXISTS floor_pauses_session ON floor_pauses (session_id);
"""
# Written with PostgreSQL's $n; SQLite reads the same numbers as ?n.
PAUSE = (
    "INSERT INTO floor_pauses (pause_id, session_id, principal, kind, query,"
    " response_schema, tool_call_id, base_revision, state, created_at, expires_at, checkpoint)"
    " VALUES ($1, $2, 'bench', 'approval', $3, $4, $5, $6, 'pending', $7, $8, $9)"
)
CLAIM = (
    "UPDATE floor_pauses SET state = 'claimed', claim_id = $1, lease_until = $2,"
    " answered_by = 'bench', answered_at = $3, answer = $4"
    " WHERE pause_id = $5 AND state = 'pending'"
)


def _turn_messages(call_id: str) -> list[dict[str, object]]:
    return [
        message_to_dict(HumanMessage(USER_MESSAGE, id=str(uuid.uuid4()))),
        message_to_dict(
            AIMessage(
                "",
                id=str(uuid.uuid4()),
                tool_calls=[{"name": TOOL_NAME, "args": dict(TOOL_ARGS), "id": call_id}],
            )
        ),
        message_to_dict(ToolMessage(TOOL_RESULT, tool_call_id=call_id, id=str(uuid.uuid4()))),
        message_to_dict(AIMessage(FINAL_ANSWER, id=str(uuid.uuid4()))),
    ]


def checkpoint_body(call_id: str, base_revision: int) -> str:
    """The in-flight turn (user message + paused round), padded to CHECKPOINT_BYTES."""
    body: dict[str, object] = {
        "format_version": 1,
        "base_revision": base_revision,
        "messages": _turn_messages(call_id)[:2],
        "pending_call_ids": [call_id],
    }
    # Padded with the run metadata a kernel keeps (limits, usage, model settings),
    # so the floor commits the size of a real checkpoint.
    body["run_metadata"] = "m" * max(0, CHECKPOINT_BYTES - len(json.dumps(body)) - 20)
    return json.dumps(body)


def history_json(body: dict[str, str]) -> str:
    """A history message as a message row stores it (langchain-core's dict form)."""
    kind = "human" if body["role"] == "human" else "ai"
    return json.dumps({"type": kind, "data": {"content": body["content"], "type": kind}})


@dataclass(frozen=True)
class PauseRow:
    pause_id: str
    call_id: str


@dataclass
class FloorSession:
    """What the floor keeps in memory about a session: its revision and length."""

    revision: int
    message_count: int


class Floor(Workload):
    """A floor's cycle as its three commits: pause, then claim and publish.

    A resume is the claim and the publish back to back, each its own commit.
    """

    system = "floor"

    def __init__(self, spec: WorkloadSpec) -> None:
        super().__init__(spec)
        self._sessions: dict[str, FloorSession] = {}

    def _new_keys(self, count: int) -> list[str]:
        first = len(self._sessions)
        keys = [f"session-{index:05d}" for index in range(first, first + count)]
        for key in keys:
            self._sessions[key] = FloorSession(0, len(self.spec.history))
        return keys

    def _new_pause(
        self, session: str, stamp: Callable[[datetime], Any]
    ) -> tuple[PauseRow, tuple[Any, ...]]:
        """A pause row, and the arguments of PAUSE that record it, its times as ``stamp``s."""
        row = PauseRow(uuid.uuid4().hex, f"call_{uuid.uuid4().hex[:24]}")
        now = datetime.now(UTC)
        revision = self._sessions[session].revision
        args = (row.pause_id, session, QUERY, RESPONSE_SCHEMA, row.call_id, revision)
        times = (stamp(now), stamp(now + PAUSE_TTL))
        return row, (*args, *times, checkpoint_body(row.call_id, revision))

    def _published(self, session: str, messages: int) -> None:
        state = self._sessions[session]
        state.revision, state.message_count = state.revision + 1, state.message_count + messages

    @abstractmethod
    async def pause(self, session: str) -> PauseRow:
        """Commit 1: the pause row, its checkpoint in it."""

    @abstractmethod
    async def claim(self, row: PauseRow) -> str:
        """Commit 2: the single-use claim; its id."""

    @abstractmethod
    async def publish(self, session: str, row: PauseRow, claim_id: str) -> None:
        """Commit 3: the revision bumped, the turn's messages, the pause published."""

    async def resume(self, session: str, handle: Any) -> None:
        await self.publish(session, handle, await self.claim(handle))


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
    """WAL, the spec's ``synchronous`` (FULL, as symfonic's), one connection."""

    conn: sqlite3.Connection

    async def open(self) -> None:
        self.conn = sqlite3.connect(self.spec.location, isolation_level=None, timeout=30)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={self.spec.sqlite_synchronous}")

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
        self.conn.executescript(SCHEMA.format(json="TEXT", time="TEXT"))

    async def add_sessions(self, count: int) -> list[str]:
        bodies = [history_json(b.as_dict()) for b in self.spec.history]
        keys = self._new_keys(count)
        self.conn.execute("BEGIN IMMEDIATE")
        for key in keys:
            self.conn.execute(
                "INSERT INTO floor_sessions VALUES (?, 'bench', 0, ?)", (key, len(bodies))
            )
            self.conn.executemany(
                INSERT_MESSAGE, ((key, seq, 0, body) for seq, body in enumerate(bodies))
            )
        self.conn.execute("COMMIT")
        return keys

    async def pause(self, session: str) -> PauseRow:
        row, args = self._new_pause(session, datetime.isoformat)
        self._write([(PAUSE.replace("$", "?"), args)])
        return row

    async def claim(self, row: PauseRow) -> str:
        now, claim_id = datetime.now(UTC), uuid.uuid4().hex
        lease = (now + CLAIM_LEASE).isoformat()
        claim_args = (claim_id, lease, now.isoformat(), ANSWER, row.pause_id)
        if self._write([(CLAIM.replace("$", "?"), claim_args)]) != [1]:
            raise WorkloadError(f"floor claim of {row.pause_id} lost")
        return claim_id

    async def publish(self, session: str, row: PauseRow, claim_id: str) -> None:
        state = self._sessions[session]
        bodies = [json.dumps(message) for message in _turn_messages(row.call_id)]
        statements: list[tuple[str, tuple[Any, ...]]] = [
            (BUMP_REVISION, (len(bodies), session, state.revision))
        ]
        statements += [
            (INSERT_MESSAGE, (session, state.message_count + i, state.revision + 1, body))
            for i, body in enumerate(bodies)
        ]
        statements.append((PUBLISH_PAUSE, (OUTCOME, row.pause_id, claim_id)))
        counts = self._write(statements)
        if counts[0] != 1 or counts[-1] != 1:
            raise WorkloadError(f"floor publish on {session} lost its revision")
        self._published(session, len(bodies))

    async def close(self) -> None:
        self.conn.close()

    def settings(self) -> dict[str, Any]:
        return {"sqlite_synchronous": self.spec.sqlite_synchronous}


# The conditional revision bump, the turn's message rows, the pause published.
PUBLISH = (
    "WITH bumped AS (UPDATE floor_sessions"
    " SET revision = revision + 1, message_count = message_count + $1"
    " WHERE session_id = $2 AND revision = $3 AND EXISTS (SELECT 1 FROM floor_pauses"
    " WHERE pause_id = $5 AND state = 'claimed' AND claim_id = $6) RETURNING revision),"
    " published AS (UPDATE floor_pauses SET state = 'published', outcome = $4"
    " WHERE pause_id = $5 AND state = 'claimed' AND claim_id = $6"
    " AND EXISTS (SELECT 1 FROM bumped) RETURNING pause_id),"
    " turn AS (INSERT INTO floor_messages (session_id, seq, revision, body)"
    " SELECT $2, $7 + ord - 1, bumped.revision, body"
    " FROM bumped, unnest($8::json[]) WITH ORDINALITY AS t(body, ord))"
    " SELECT (SELECT count(*) FROM bumped) AS bumped, (SELECT count(*) FROM published) AS published"
)


class PostgresFloor(Floor):
    """READ COMMITTED and ``synchronous_commit`` as the server has them, as for every system."""

    pool: asyncpg.Pool

    async def open(self) -> None:
        size = max(1, self.spec.concurrency)
        self.pool = await asyncpg.create_pool(self.spec.location, min_size=size, max_size=size)

    async def setup(self) -> None:
        await self.pool.execute(SCHEMA.format(json="JSON", time="TIMESTAMPTZ"))

    async def add_sessions(self, count: int) -> list[str]:
        bodies = [history_json(b.as_dict()) for b in self.spec.history]
        keys = self._new_keys(count)
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.executemany(
                "INSERT INTO floor_sessions VALUES ($1, 'bench', 0, $2)",
                [(key, len(bodies)) for key in keys],
            )
            for key in keys:
                await conn.copy_records_to_table(
                    "floor_messages",
                    records=[(key, seq, 0, body) for seq, body in enumerate(bodies)],
                    columns=["session_id", "seq", "revision", "body"],
                )
        return keys

    async def pause(self, session: str) -> PauseRow:
        row, args = self._new_pause(session, lambda at: at)
        await self.pool.execute(PAUSE, *args)
        return row

    async def claim(self, row: PauseRow) -> str:
        now, claim_id = datetime.now(UTC), uuid.uuid4().hex
        status = await self.pool.execute(
            CLAIM, claim_id, now + CLAIM_LEASE, now, ANSWER, row.pause_id
        )
        if status != "UPDATE 1":
            raise WorkloadError(f"floor claim of {row.pause_id} lost")
        return claim_id

    async def publish(self, session: str, row: PauseRow, claim_id: str) -> None:
        state = self._sessions[session]
        bodies = [json.dumps(message) for message in _turn_messages(row.call_id)]
        counts = await self.pool.fetchrow(
            PUBLISH,
            len(bodies),
            session,
            state.revision,
            OUTCOME,
            row.pause_id,
            claim_id,
            state.message_count,
            bodies,
        )
        if counts is None or counts["bumped"] != 1:
            raise WorkloadError(f"floor publish on {session} lost its revision")
        if counts["published"] != 1:
            raise WorkloadError(f"floor publish of {row.pause_id} lost its claim")
        self._published(session, len(bodies))

    async def close(self) -> None:
        await self.pool.close()

    def settings(self) -> dict[str, Any]:
        return {"pool_size": max(1, self.spec.concurrency)}
