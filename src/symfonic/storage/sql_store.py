"""The storage port over SQLAlchemy Core, shared by the SQLite and PostgreSQL adapters.

Each public method is one transaction. The single-use transitions are single
conditional ``UPDATE`` statements whose row count decides the race: the claim
(``pending`` and unexpired → ``claimed``), the publish (``claimed`` by this claim
→ ``published``, with the session's revision moved only from the pause's base
revision), and the abandon (``claimed`` by this claim → ``abandoned``). Nothing
is read first and written after, so the isolation level the adapters rely on is
the default READ COMMITTED: a conditional update re-checks its predicate on the
row it locks, which is all a race can reach.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from symfonic.core.contracts.errors import (
    PauseAbandoned,
    RevisionConflict,
    StoreUnavailable,
)
from symfonic.core.contracts.store import (
    CheckpointRecord,
    Claim,
    PauseRecord,
    SessionRecord,
    SweepReport,
)
from symfonic.core.contracts.types import InteractionKind, PauseState
from symfonic.core.messages import MessageBody
from symfonic.storage import migrate
from symfonic.storage.schema import checkpoints, messages, meta, pauses, sessions

SECRET_KEY = "pause_token_secret"
CLAIMED = PauseState.CLAIMED.value
PENDING = PauseState.PENDING.value


def _aware(value: datetime | None) -> datetime | None:
    """SQLite hands timestamps back naive; everything here is UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def _pause_of(row: sa.Row[Any]) -> PauseRecord:
    m = row._mapping
    created_at = _aware(m["created_at"])
    expires_at = _aware(m["expires_at"])
    assert created_at is not None and expires_at is not None
    return PauseRecord(
        pause_id=m["pause_id"],
        session_id=m["session_id"],
        principal=m["principal"],
        agent=m["agent"],
        audience=m["audience"],
        kind=InteractionKind(m["kind"]),
        query=m["query"],
        response_schema=m["response_schema"],
        tool_call_id=m["tool_call_id"],
        interrupt_id=m["interrupt_id"],
        base_revision=m["base_revision"],
        state=PauseState(m["state"]),
        created_at=created_at,
        expires_at=expires_at,
        supersedes=m["supersedes"],
        claim_id=m["claim_id"],
        lease_until=_aware(m["lease_until"]),
        answered_by=m["answered_by"],
        answered_at=_aware(m["answered_at"]),
        answer=m["answer"],
        answer_status=m["answer_status"],
        outcome=m["outcome"],
    )


class SqlStore:
    """A ``Store`` over an async SQLAlchemy engine; adapters supply the engine."""

    def __init__(self, url: str, engine: AsyncEngine) -> None:
        self.url = url
        self._engine = engine
        self._secret: bytes | None = None

    # lifecycle ------------------------------------------------------------

    async def __aenter__(self) -> SqlStore:
        async with self._write() as conn:
            await self._lock_for_migrations(conn)
            await conn.run_sync(migrate.upgrade)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._engine.dispose()

    async def _lock_for_migrations(self, conn: AsyncConnection) -> None:
        """Serialise concurrent migrations; the adapter's write lock suffices by default."""

    def _unavailable(self, error: BaseException) -> bool:
        """Whether a driver error means the database is out of reach."""
        return isinstance(error, sa.exc.OperationalError | sa.exc.InterfaceError | OSError) or (
            isinstance(error, sa.exc.DBAPIError) and error.connection_invalidated
        )

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        """One write transaction; driver failures leave nothing and say why."""
        try:
            async with self._engine.begin() as conn:
                yield conn
        except sa.exc.DBAPIError as error:
            if self._unavailable(error):
                raise StoreUnavailable(f"the store could not complete a write: {error.orig}") from error
            raise
        except OSError as error:
            raise StoreUnavailable(f"the store is out of reach: {error}") from error

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        try:
            async with self._engine.connect() as conn:
                yield conn
        except sa.exc.DBAPIError as error:
            if self._unavailable(error):
                raise StoreUnavailable(f"the store could not answer a read: {error.orig}") from error
            raise
        except OSError as error:
            raise StoreUnavailable(f"the store is out of reach: {error}") from error

    async def ping(self) -> None:
        async with self._read() as conn:
            await conn.execute(sa.text("SELECT 1"))

    async def signing_secret(self) -> bytes:
        if self._secret is not None:
            return self._secret
        async with self._write() as conn:
            await conn.execute(
                self._insert_ignore(meta, ["key"]).values(
                    key=SECRET_KEY, value=secrets.token_bytes(32)
                )
            )
            value = (
                await conn.execute(sa.select(meta.c.value).where(meta.c.key == SECRET_KEY))
            ).scalar_one()
        self._secret = bytes(value)
        return self._secret

    def _insert_ignore(self, table: sa.Table, keys: list[str]) -> Any:
        """``INSERT … ON CONFLICT DO NOTHING`` in the adapter's dialect."""
        raise NotImplementedError

    # sessions and history -------------------------------------------------

    async def create_session(self, session: SessionRecord) -> None:
        async with self._write() as conn:
            await conn.execute(
                sessions.insert().values(
                    session_id=session.session_id,
                    principal=session.principal,
                    agent=session.agent,
                    revision=session.revision,
                    message_count=0,
                    metadata=session.metadata,
                    created_at=session.created_at,
                )
            )

    async def get_session(self, session_id: str) -> SessionRecord | None:
        async with self._read() as conn:
            row = (
                await conn.execute(sessions.select().where(sessions.c.session_id == session_id))
            ).first()
        if row is None:
            return None
        m = row._mapping
        lease = _aware(m["run_lease"])
        created_at = _aware(m["created_at"])
        assert created_at is not None
        return SessionRecord(
            session_id=m["session_id"],
            principal=m["principal"],
            agent=m["agent"],
            revision=m["revision"],
            metadata=m["metadata"],
            created_at=created_at,
            running=m["run_id"] is not None and lease is not None and lease > datetime.now(UTC),
        )

    async def history(self, session_id: str, up_to_revision: int) -> list[MessageBody]:
        async with self._read() as conn:
            rows = await conn.execute(
                sa.select(messages.c.body)
                .where(messages.c.session_id == session_id, messages.c.revision <= up_to_revision)
                .order_by(messages.c.seq)
            )
            return [row[0] for row in rows]

    async def begin_run(
        self, session_id: str, run_id: str, *, now: datetime, lease_until: datetime
    ) -> bool:
        async with self._write() as conn:
            result = await conn.execute(
                sessions.update()
                .where(
                    sessions.c.session_id == session_id,
                    sa.or_(sessions.c.run_id.is_(None), sessions.c.run_lease < now),
                )
                .values(run_id=run_id, run_lease=lease_until)
            )
            return result.rowcount == 1

    async def end_run(self, session_id: str, run_id: str) -> None:
        async with self._write() as conn:
            await self._clear_run(conn, session_id, run_id)

    async def _clear_run(self, conn: AsyncConnection, session_id: str, run_id: str) -> None:
        await conn.execute(
            sessions.update()
            .where(sessions.c.session_id == session_id, sessions.c.run_id == run_id)
            .values(run_id=None, run_lease=None)
        )

    async def _append(
        self,
        conn: AsyncConnection,
        session_id: str,
        base_revision: int,
        bodies: Sequence[MessageBody],
        *,
        run_id: str | None = None,
    ) -> int:
        """Move the revision on from ``base_revision`` and append; the caller's transaction."""
        values: dict[str, Any] = {
            "revision": sessions.c.revision + 1,
            "message_count": sessions.c.message_count + len(bodies),
        }
        if run_id is not None:
            values.update(run_id=None, run_lease=None)
        row = (
            await conn.execute(
                sessions.update()
                .where(sessions.c.session_id == session_id, sessions.c.revision == base_revision)
                .values(**values)
                .returning(sessions.c.revision, sessions.c.message_count)
            )
        ).first()
        if row is None:
            raise RevisionConflict(
                f"session {session_id} is no longer at revision {base_revision}; "
                "another turn was published first",
                base_revision=base_revision,
            )
        revision, count = row
        start = count - len(bodies)
        if bodies:
            await conn.execute(
                messages.insert(),
                [
                    {"session_id": session_id, "seq": start + i, "revision": revision, "body": body}
                    for i, body in enumerate(bodies)
                ],
            )
        return int(revision)

    async def publish_turn(
        self, session_id: str, base_revision: int, messages: Sequence[MessageBody], run_id: str
    ) -> int:
        async with self._write() as conn:
            return await self._append(conn, session_id, base_revision, messages, run_id=run_id)

    # pauses and checkpoints ----------------------------------------------

    async def record_pause(
        self,
        pause: PauseRecord,
        checkpoint: CheckpointRecord,
        *,
        supersedes: str | None = None,
        run_id: str | None = None,
    ) -> None:
        async with self._write() as conn:
            replaced: str | None = None
            if supersedes is not None:
                replaced = (
                    await conn.execute(
                        self._claimed_by(pause.session_id, supersedes)
                        .values(
                            state=PauseState.SUPERSEDED.value,
                            outcome={"status": "paused", "pause_id": pause.pause_id},
                        )
                        .returning(pauses.c.pause_id)
                    )
                ).scalar()
                if replaced is None:
                    raise PauseAbandoned(
                        "the claim this turn resumed was lost before its second pause "
                        "could be recorded",
                        claim_id=supersedes,
                    )
                await conn.execute(checkpoints.delete().where(checkpoints.c.pause_id == replaced))
            await conn.execute(
                checkpoints.insert().values(
                    pause_id=checkpoint.pause_id,
                    session_id=checkpoint.session_id,
                    format_version=checkpoint.format_version,
                    base_revision=checkpoint.base_revision,
                    body=checkpoint.body,
                )
            )
            await conn.execute(
                pauses.insert().values(
                    pause_id=pause.pause_id,
                    session_id=pause.session_id,
                    principal=pause.principal,
                    agent=pause.agent,
                    audience=pause.audience,
                    kind=pause.kind.value,
                    query=pause.query,
                    response_schema=pause.response_schema,
                    tool_call_id=pause.tool_call_id,
                    interrupt_id=pause.interrupt_id,
                    base_revision=pause.base_revision,
                    state=PENDING,
                    created_at=pause.created_at,
                    expires_at=pause.expires_at,
                    supersedes=replaced,
                )
            )
            if run_id is not None:
                await self._clear_run(conn, pause.session_id, run_id)

    async def get_pause(self, pause_id: str) -> PauseRecord | None:
        async with self._read() as conn:
            row = (await conn.execute(pauses.select().where(pauses.c.pause_id == pause_id))).first()
        return None if row is None else _pause_of(row)

    async def load_checkpoint(self, pause_id: str) -> CheckpointRecord | None:
        async with self._read() as conn:
            row = (
                await conn.execute(checkpoints.select().where(checkpoints.c.pause_id == pause_id))
            ).first()
        if row is None:
            return None
        m = row._mapping
        return CheckpointRecord(
            pause_id=m["pause_id"],
            session_id=m["session_id"],
            format_version=m["format_version"],
            base_revision=m["base_revision"],
            body=m["body"],
        )

    async def claim_pause(self, claim: Claim, *, now: datetime) -> bool:
        async with self._write() as conn:
            result = await conn.execute(
                pauses.update()
                .where(
                    pauses.c.pause_id == claim.pause_id,
                    pauses.c.state == PENDING,
                    pauses.c.expires_at > now,
                )
                .values(
                    state=CLAIMED,
                    claim_id=claim.claim_id,
                    lease_until=claim.lease_until,
                    answered_by=claim.principal,
                    answered_at=claim.at,
                    answer=claim.answer,
                    answer_status=claim.status,
                )
            )
            return result.rowcount == 1

    def _claimed_by(self, session_id: str, claim_id: str) -> Any:
        """The one row this claim holds, while it still holds it."""
        return pauses.update().where(
            pauses.c.session_id == session_id,
            pauses.c.claim_id == claim_id,
            pauses.c.state == CLAIMED,
        )

    async def claimed_pause(self, session_id: str, claim_id: str) -> PauseRecord | None:
        async with self._read() as conn:
            row = (
                await conn.execute(
                    pauses.select().where(
                        pauses.c.session_id == session_id, pauses.c.claim_id == claim_id
                    )
                )
            ).first()
        return None if row is None else _pause_of(row)

    async def renew_claim(self, session_id: str, claim_id: str, lease_until: datetime) -> bool:
        async with self._write() as conn:
            result = await conn.execute(
                self._claimed_by(session_id, claim_id).values(lease_until=lease_until)
            )
            return result.rowcount == 1

    async def publish_resume(
        self, session_id: str, claim_id: str, messages: Sequence[MessageBody], answer: str
    ) -> int:
        async with self._write() as conn:
            row = (
                await conn.execute(
                    self._claimed_by(session_id, claim_id)
                    .values(
                        state=PauseState.PUBLISHED.value,
                        outcome={"status": "complete", "answer": answer},
                    )
                    .returning(pauses.c.pause_id, pauses.c.base_revision)
                )
            ).first()
            if row is None:
                raise PauseAbandoned(
                    "this resume's claim lapsed before it could publish", claim_id=claim_id
                )
            pause_id, base_revision = row
            # A revision conflict raised here rolls the pause update back with it.
            revision = await self._append(conn, session_id, base_revision, messages)
            await conn.execute(checkpoints.delete().where(checkpoints.c.pause_id == pause_id))
            return revision

    async def abandon_claim(self, session_id: str, claim_id: str) -> bool:
        async with self._write() as conn:
            result = await conn.execute(
                self._claimed_by(session_id, claim_id).values(state=PauseState.ABANDONED.value)
            )
            return result.rowcount == 1

    async def abandon_pending(self, session_id: str) -> int:
        async with self._write() as conn:
            result = await conn.execute(
                pauses.update()
                .where(pauses.c.session_id == session_id, pauses.c.state == PENDING)
                .values(state=PauseState.ABANDONED.value)
            )
            return int(result.rowcount)

    async def open_pause(self, session_id: str) -> PauseRecord | None:
        async with self._read() as conn:
            row = (
                await conn.execute(
                    pauses.select()
                    .where(pauses.c.session_id == session_id, pauses.c.state.in_([PENDING, CLAIMED]))
                    .order_by(pauses.c.created_at.desc())
                    .limit(1)
                )
            ).first()
        return None if row is None else _pause_of(row)

    async def session_pauses(self, session_id: str) -> list[PauseRecord]:
        async with self._read() as conn:
            rows = await conn.execute(
                pauses.select()
                .where(pauses.c.session_id == session_id)
                .order_by(pauses.c.created_at)
            )
            return [_pause_of(row) for row in rows]

    async def list_pauses(
        self,
        state: PauseState,
        *,
        principal: str,
        scopes: frozenset[str],
        limit: int = 100,
    ) -> list[PauseRecord]:
        """Pauses in ``state`` that ``principal`` may answer, oldest first."""
        query = pauses.select().where(pauses.c.state == state.value)
        if "*" not in scopes:
            query = query.where(
                sa.or_(
                    sa.and_(pauses.c.audience.is_(None), pauses.c.principal == principal),
                    pauses.c.audience.in_(sorted(scopes)),
                )
            )
        async with self._read() as conn:
            rows = await conn.execute(query.order_by(pauses.c.created_at).limit(limit))
            return [_pause_of(row) for row in rows]

    async def sweep(self, now: datetime) -> SweepReport:
        async with self._write() as conn:
            expired = await conn.execute(
                pauses.update()
                .where(pauses.c.state == PENDING, pauses.c.expires_at <= now)
                .values(state=PauseState.EXPIRED.value)
            )
            abandoned = await conn.execute(
                pauses.update()
                .where(pauses.c.state == CLAIMED, pauses.c.lease_until <= now)
                .values(state=PauseState.ABANDONED.value)
            )
            return SweepReport(expired=int(expired.rowcount), abandoned=int(abandoned.rowcount))
