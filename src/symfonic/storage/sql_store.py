"""The storage port over SQLAlchemy Core, shared by the SQLite and PostgreSQL adapters.

Each public method is one transaction (``_write``) or one read (``_read``). Every
transition a race can reach is a single conditional ``UPDATE`` whose row count
(or ``RETURNING`` row) decides it, never a read followed by a write:

- claim: ``pending`` and unexpired → ``claimed``, keyed by the pause id;
- renew, abandon, supersede, publish: only while ``claimed`` by *this* claim id;
- publish also moves the session's revision on only from the pause's base
  revision, in the same transaction that appends the history rows, so a lost
  race raises :class:`RevisionConflict` and rolls the pause update back with it;
- sweep: ``pending`` past ``expires_at`` → ``expired``, ``claimed`` past its
  lease → ``abandoned``, skipping rows another transaction holds.

The isolation level relied on is READ COMMITTED (PostgreSQL's default; the
adapter sets it explicitly so a server configured otherwise cannot change the
outcome of a race). Under it, an ``UPDATE`` that finds its row locked by a
concurrent writer waits, then re-evaluates its ``WHERE`` on the committed
version: of N concurrent claims exactly one still sees ``pending``. A stricter
level would turn those losers into serialisation failures instead of a clean
"not mine". SQLite serialises every writer on its database lock (see
:mod:`symfonic.storage.sqlite`), which gives the same outcome.

Transactions, driver failures and start-up are in
:mod:`symfonic.storage.transactions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from symfonic.core.contracts.errors import PauseAbandoned, RevisionConflict
from symfonic.core.contracts.store import (
    CheckpointRecord,
    Claim,
    PauseRecord,
    SessionRecord,
    SweepReport,
)
from symfonic.core.contracts.types import PauseState
from symfonic.core.messages import MessageBody
from symfonic.storage.rows import checkpoint_of, pause_of, session_of
from symfonic.storage.schema import checkpoints, messages, pauses, sessions
from symfonic.storage.transactions import SqlTransactions

CLAIMED = PauseState.CLAIMED.value
PENDING = PauseState.PENDING.value


def _claimed_by(session_id: str, claim_id: str) -> Any:
    """The one row this claim holds, while it still holds it."""
    return pauses.update().where(
        pauses.c.session_id == session_id,
        pauses.c.claim_id == claim_id,
        pauses.c.state == CLAIMED,
    )


def _run_cleared(session_id: str, run_id: str) -> Any:
    return (
        sessions.update()
        .where(sessions.c.session_id == session_id, sessions.c.run_id == run_id)
        .values(run_id=None, run_lease=None)
    )


def _append(
    conn: sa.Connection,
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
    row = conn.execute(
        sessions.update()
        .where(sessions.c.session_id == session_id, sessions.c.revision == base_revision)
        .values(**values)
        .returning(sessions.c.revision, sessions.c.message_count)
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
        conn.execute(
            messages.insert(),
            [
                {"session_id": session_id, "seq": start + i, "revision": revision, "body": body}
                for i, body in enumerate(bodies)
            ],
        )
    return int(revision)


def _one_pause(conn: sa.Connection, *where: Any) -> PauseRecord | None:
    row = conn.execute(pauses.select().where(*where)).first()
    return None if row is None else pause_of(row)


class SqlStore(SqlTransactions):
    """A ``Store`` over SQLAlchemy Core; adapters supply how units of work run."""

    # sessions and history -------------------------------------------------

    async def create_session(self, session: SessionRecord) -> None:
        insert = sessions.insert().values(
            session_id=session.session_id,
            principal=session.principal,
            agent=session.agent,
            revision=session.revision,
            message_count=0,
            metadata=session.metadata,
            created_at=session.created_at,
        )
        await self._write_one(insert)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        def read(conn: sa.Connection) -> SessionRecord | None:
            query = sessions.select().where(sessions.c.session_id == session_id)
            row = conn.execute(query).first()
            return None if row is None else session_of(row, now=datetime.now(UTC))

        return await self._read(read)

    async def history(self, session_id: str, up_to_revision: int) -> list[MessageBody]:
        query = (
            sa.select(messages.c.body)
            .where(messages.c.session_id == session_id, messages.c.revision <= up_to_revision)
            .order_by(messages.c.seq)
        )
        return await self._read(lambda conn: [row[0] for row in conn.execute(query)])

    async def begin_run(
        self, session_id: str, run_id: str, *, now: datetime, lease_until: datetime
    ) -> bool:
        update = (
            sessions.update()
            .where(
                sessions.c.session_id == session_id,
                sa.or_(sessions.c.run_id.is_(None), sessions.c.run_lease < now),
            )
            .values(run_id=run_id, run_lease=lease_until)
        )
        return await self._write_one(update) == 1

    async def end_run(self, session_id: str, run_id: str) -> None:
        """Clear this run's marker (only this run's); retried like every cleanup."""
        await self._cleanup(_run_cleared(session_id, run_id))

    async def publish_turn(
        self, session_id: str, base_revision: int, messages: Sequence[MessageBody], run_id: str
    ) -> int:
        return await self._write(
            lambda conn: _append(conn, session_id, base_revision, messages, run_id=run_id)
        )

    # pauses and checkpoints ----------------------------------------------

    async def record_pause(
        self,
        pause: PauseRecord,
        checkpoint: CheckpointRecord,
        *,
        supersedes: str | None = None,
        run_id: str | None = None,
    ) -> None:
        def record(conn: sa.Connection) -> None:
            replaced: str | None = None
            if supersedes is not None:
                replaced = conn.execute(
                    _claimed_by(pause.session_id, supersedes)
                    .values(
                        state=PauseState.SUPERSEDED.value,
                        outcome={"status": "paused", "pause_id": pause.pause_id},
                    )
                    .returning(pauses.c.pause_id)
                ).scalar()
                if replaced is None:
                    raise PauseAbandoned(
                        "the claim this turn resumed was lost before its second pause "
                        "could be recorded",
                        claim_id=supersedes,
                    )
                conn.execute(checkpoints.delete().where(checkpoints.c.pause_id == replaced))
            conn.execute(
                checkpoints.insert().values(
                    pause_id=checkpoint.pause_id,
                    session_id=checkpoint.session_id,
                    format_version=checkpoint.format_version,
                    base_revision=checkpoint.base_revision,
                    body=checkpoint.body,
                )
            )
            conn.execute(
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
                conn.execute(_run_cleared(pause.session_id, run_id))

        await self._write(record)

    async def get_pause(self, pause_id: str) -> PauseRecord | None:
        return await self._read(lambda conn: _one_pause(conn, pauses.c.pause_id == pause_id))

    async def load_checkpoint(self, pause_id: str) -> CheckpointRecord | None:
        def read(conn: sa.Connection) -> CheckpointRecord | None:
            query = checkpoints.select().where(checkpoints.c.pause_id == pause_id)
            row = conn.execute(query).first()
            return None if row is None else checkpoint_of(row)

        return await self._read(read)

    async def claim_pause(self, claim: Claim, *, now: datetime) -> bool:
        update = (
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
        return await self._write_one(update) == 1

    async def claimed_pause(self, session_id: str, claim_id: str) -> PauseRecord | None:
        return await self._read(
            lambda conn: _one_pause(
                conn, pauses.c.session_id == session_id, pauses.c.claim_id == claim_id
            )
        )

    async def renew_claim(self, session_id: str, claim_id: str, lease_until: datetime) -> bool:
        update = _claimed_by(session_id, claim_id).values(lease_until=lease_until)
        return await self._write_one(update) == 1

    async def publish_resume(
        self, session_id: str, claim_id: str, messages: Sequence[MessageBody], answer: str
    ) -> int:
        def publish(conn: sa.Connection) -> int:
            row = conn.execute(
                _claimed_by(session_id, claim_id)
                .values(
                    state=PauseState.PUBLISHED.value,
                    outcome={"status": "complete", "answer": answer},
                )
                .returning(pauses.c.pause_id, pauses.c.base_revision)
            ).first()
            if row is None:
                raise PauseAbandoned(
                    "this resume's claim lapsed before it could publish", claim_id=claim_id
                )
            pause_id, base_revision = row
            # A revision conflict raised here rolls the pause update back with it.
            revision = _append(conn, session_id, base_revision, messages)
            conn.execute(checkpoints.delete().where(checkpoints.c.pause_id == pause_id))
            return revision

        return await self._write(publish)

    async def abandon_claim(self, session_id: str, claim_id: str) -> bool:
        """Move this claim's pause to ``abandoned``; false if it already left ``claimed``.

        A failed turn's cleanup: retried while the store is unavailable, then
        left to the sweeper and the lease.
        """
        abandoned = _claimed_by(session_id, claim_id).values(state=PauseState.ABANDONED.value)
        return await self._cleanup(abandoned) == 1

    async def abandon_pending(self, session_id: str) -> int:
        update = (
            pauses.update()
            .where(pauses.c.session_id == session_id, pauses.c.state == PENDING)
            .values(state=PauseState.ABANDONED.value)
        )
        return await self._write_one(update)

    async def open_pause(self, session_id: str) -> PauseRecord | None:
        query = (
            pauses.select()
            .where(pauses.c.session_id == session_id, pauses.c.state.in_([PENDING, CLAIMED]))
            .order_by(pauses.c.created_at.desc())
            .limit(1)
        )

        def read(conn: sa.Connection) -> PauseRecord | None:
            row = conn.execute(query).first()
            return None if row is None else pause_of(row)

        return await self._read(read)

    async def session_pauses(self, session_id: str) -> list[PauseRecord]:
        query = (
            pauses.select().where(pauses.c.session_id == session_id).order_by(pauses.c.created_at)
        )
        return await self._read(lambda conn: [pause_of(row) for row in conn.execute(query)])

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
        query = query.order_by(pauses.c.created_at).limit(limit)
        return await self._read(lambda conn: [pause_of(row) for row in conn.execute(query)])

    async def sweep(self, now: datetime) -> SweepReport:
        """Expire stale pending pauses and abandon claims whose lease ran out.

        Rows another transaction holds (a claim being won, a lease being renewed,
        a publish) are skipped rather than waited for (``SKIP LOCKED``, ignored by
        SQLite, whose writers never overlap): a sweep never blocks a turn, and
        sweepers on many workers never deadlock on each other.
        """

        def stale(*where: Any) -> Any:
            locked = sa.select(pauses.c.pause_id).where(*where).with_for_update(skip_locked=True)
            return pauses.update().where(pauses.c.pause_id.in_(locked), *where)

        expire = stale(pauses.c.state == PENDING, pauses.c.expires_at <= now).values(
            state=PauseState.EXPIRED.value
        )
        abandon = stale(pauses.c.state == CLAIMED, pauses.c.lease_until <= now).values(
            state=PauseState.ABANDONED.value
        )

        def sweep(conn: sa.Connection) -> SweepReport:
            expired = int(conn.execute(expire).rowcount)
            return SweepReport(expired=expired, abandoned=int(conn.execute(abandon).rowcount))

        return await self._write(sweep)
