"""The PostgreSQL floor: the three commits of a cycle on raw asyncpg, nothing else.

An asyncpg pool sized to the concurrency, default isolation (READ COMMITTED) and
``synchronous_commit`` as the server has it, the same as every other system on the
same server. The commits are those of :mod:`bench.workloads.floor_sqlite`, each
written as one statement (data-modifying ``WITH`` clauses), so each costs one
round trip and one commit and nothing else: a floor should not pay for
``BEGIN``/``COMMIT`` round trips or for a round trip per row.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import asyncpg

from bench.workloads.base import WorkloadError, package_version
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
    body JSON NOT NULL, PRIMARY KEY (session_id, seq));
CREATE TABLE IF NOT EXISTS floor_pauses (
    pause_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, principal TEXT NOT NULL,
    kind TEXT NOT NULL, query TEXT NOT NULL, response_schema JSON NOT NULL,
    tool_call_id TEXT NOT NULL, base_revision INTEGER NOT NULL, state TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL, expires_at TIMESTAMPTZ NOT NULL, claim_id TEXT,
    lease_until TIMESTAMPTZ, answered_by TEXT, answered_at TIMESTAMPTZ, answer JSON,
    outcome JSON, checkpoint JSON);
CREATE INDEX IF NOT EXISTS floor_pauses_session ON floor_pauses (session_id);
"""

# Commit 1: the pause row, its checkpoint in it.
PAUSE = (
    "INSERT INTO floor_pauses (pause_id, session_id, principal, kind, query,"
    " response_schema, tool_call_id, base_revision, state, created_at, expires_at, checkpoint)"
    " VALUES ($1, $2, 'bench', 'approval', $3, $4, $5, $6, 'pending', $7, $8, $9)"
)
# Commit 2: the single-use claim.
CLAIM = (
    "UPDATE floor_pauses SET state = 'claimed', claim_id = $1, lease_until = $2,"
    " answered_by = 'bench', answered_at = $3, answer = $4"
    " WHERE pause_id = $5 AND state = 'pending'"
)
# Commit 3: the conditional revision bump, the turn's message rows, the pause published.
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


def _count(status: str) -> int:
    """Rows affected, from asyncpg's command tag ("UPDATE 1")."""
    return int(status.rsplit(" ", 1)[-1])


class PostgresFloor(Floor):
    _pool: asyncpg.Pool | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sessions: dict[str, FloorSession] = {}

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise WorkloadError("floor store is not open")
        return self._pool

    async def open(self) -> None:
        size = max(1, self.spec.concurrency)
        self._pool = await asyncpg.create_pool(self.spec.location, min_size=size, max_size=size)

    async def setup(self) -> None:
        await self.pool.execute(SCHEMA)

    async def add_sessions(self, count: int) -> list[str]:
        bodies = [history_json(b.as_dict()) for b in self.spec.history]
        first = len(self._sessions)
        keys = [f"session-{index:05d}" for index in range(first, first + count)]
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
                self._sessions[key] = FloorSession(key, 0, len(bodies))
        return keys

    async def pause(self, session: str) -> PauseRow:
        state = self._sessions[session]
        row = PauseRow.new()
        body = checkpoint_body(row.call_id, state.revision)
        await self.pool.execute(
            PAUSE,
            row.pause_id,
            session,
            QUERY,
            RESPONSE_SCHEMA,
            row.call_id,
            state.revision,
            row.created_at,
            row.expires_at,
            body,
        )
        return row

    async def claim(self, row: PauseRow) -> str:
        now = datetime.now(UTC)
        claim_id = uuid.uuid4().hex
        status = await self.pool.execute(
            CLAIM, claim_id, now + CLAIM_LEASE, now, ANSWER, row.pause_id
        )
        if _count(status) != 1:
            raise WorkloadError(f"floor claim of {row.pause_id} lost")
        return claim_id

    async def publish(self, session: str, row: PauseRow, claim_id: str) -> None:
        state = self._sessions[session]
        bodies = turn_bodies(row.call_id)
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
        revision = state.revision + 1
        state.revision, state.message_count = revision, state.message_count + len(bodies)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
        self._pool = None

    def versions(self) -> dict[str, str]:
        return {"asyncpg": package_version("asyncpg")}

    def settings(self) -> dict[str, Any]:
        return {"pool_size": max(1, self.spec.concurrency)}
