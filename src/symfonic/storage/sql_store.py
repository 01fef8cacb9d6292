"""The storage port in SQL, shared by the SQLite and PostgreSQL adapters.

Each public method is one transaction (``_write``) or one statement
(``_write_one``, ``_read_one``). Every transition a race can reach is a single
conditional ``UPDATE`` whose row count (or ``RETURNING`` row) decides it, never
a read followed by a write:

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

The statements (:mod:`symfonic.storage.queries`) are plain SQL that both
databases accept; where they differ, the adapter says so: row locks for the
sweep (``LOCK_FOR_SWEEP``), the statements that return a history and where
they read it (``HISTORIES``, :mod:`symfonic.storage.history_statements`), and
PostgreSQL's one-statement steps (:mod:`symfonic.storage.postgres_statements`).
How units of work run, driver failures and start-up are in
:mod:`symfonic.storage.transactions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar

from symfonic.core.contracts.errors import PauseAbandoned, RevisionConflict
from symfonic.core.contracts.store import (
    CheckpointRecord,
    Claim,
    ClaimedPause,
    OwnClaim,
    PauseRecord,
    PruneReport,
    RunStart,
    SessionRecord,
    SweepReport,
)
from symfonic.core.contracts.types import InteractionKind, PauseState
from symfonic.core.messages import MessageBody
from symfonic.storage.history_statements import HistoryStatements, history_of
from symfonic.storage.pause_changes import PauseChangeRecord
from symfonic.storage.queries import (
    ABANDON_CLAIM,
    ABANDON_PENDING,
    CLAIMED_PAUSE,
    CREATE_SESSION,
    END_RUN,
    GET_PAUSE,
    GET_SESSION,
    INSERT_MESSAGE,
    INSERT_PAUSE,
    LOAD_CHECKPOINT,
    NEXT_REVISION,
    NEXT_REVISION_ENDING_RUN,
    OPEN_PAUSE,
    PUBLISH_PAUSE,
    RENEW_CLAIM,
    SESSION_PAUSES,
    SUPERSEDE,
    claim_params,
    completed_outcome,
    own_claim_params,
    pause_params,
    sweep_statements,
)
from symfonic.storage.retention import prune_batch
from symfonic.storage.rows import PAUSE_COLUMNS, checkpoint_of, pause_of, session_of
from symfonic.storage.statements import Query, Result, Row, Statement, Unit, json_text


def revision_conflict(session_id: str, base_revision: int) -> RevisionConflict:
    return RevisionConflict(
        f"session {session_id} is no longer at revision {base_revision}; "
        "another turn was published first",
        base_revision=base_revision,
    )


def claim_lapsed(claim_id: str) -> PauseAbandoned:
    return PauseAbandoned("this resume's claim lapsed before it could publish", claim_id=claim_id)


def run_lost(session_id: str) -> RevisionConflict:
    return RevisionConflict(
        f"this turn's hold on session {session_id} lapsed while it ran and another turn "
        "may have started; nothing was recorded",
        session_id=session_id,
    )


def _append(
    session_id: str,
    base_revision: int,
    bodies: Sequence[MessageBody],
    *,
    ending_run: bool = False,
) -> Unit[int]:
    """Move the revision on from ``base_revision`` and append; part of the caller's unit."""
    bump = NEXT_REVISION_ENDING_RUN if ending_run else NEXT_REVISION
    row = (
        yield bump(session_id=session_id, base_revision=base_revision, added=len(bodies))
    ).first()
    if row is None:
        raise revision_conflict(session_id, base_revision)
    revision, start = int(row["revision"]), int(row["message_count"]) - len(bodies)
    if bodies:
        yield INSERT_MESSAGE.many(
            [
                {
                    "session_id": session_id,
                    "seq": start + i,
                    "revision": revision,
                    "body": json_text(body),
                }
                for i, body in enumerate(bodies)
            ]
        )
    return revision


# A step that started a turn: its row, and the history the turn runs on.
Started = tuple[Row, list[MessageBody]]


def _pause_or_none(result: Result) -> PauseRecord | None:
    row = result.first()
    return None if row is None else pause_of(row)


class SqlStore(PauseChangeRecord):
    """A ``Store`` in SQL; adapters supply how units of work run."""

    # Row locks for the sweep's inner SELECT, in the adapter's dialect.
    LOCK_FOR_SWEEP: ClassVar[str] = ""
    # The statements that return a session's history, in the adapter's SQL.
    HISTORIES: ClassVar[HistoryStatements]

    # sessions and history -------------------------------------------------

    async def create_session(self, session: SessionRecord) -> None:
        await self._write_one(
            CREATE_SESSION(
                session_id=session.session_id,
                principal=session.principal,
                agent=session.agent,
                revision=session.revision,
                metadata=json_text(session.metadata),
                created_at=session.created_at,
            )
        )

    async def get_session(self, session_id: str) -> SessionRecord | None:
        row = (await self._read_one(GET_SESSION(session_id=session_id))).first()
        return None if row is None else session_of(row, now=datetime.now(UTC))

    async def history(self, session_id: str, up_to_revision: int) -> list[MessageBody]:
        read = self.HISTORIES.history(session_id=session_id, revision=up_to_revision)
        row = (await self._read_one(read)).first()
        return [] if row is None else history_of(row["bodies"])

    async def _with_history(self, step: Query, revision: str) -> Started | None:
        """A step that starts a turn, its row and the history the turn runs on.

        The history is the step's session's up to the revision in the row's
        column ``revision``, read in the step's transaction (see
        :mod:`symfonic.storage.history_statements`); ``None`` if the step
        touched no row.
        """
        if self.HISTORIES.in_the_step:
            row = (await self._write_one(step)).first()
            return None if row is None else (row, history_of(row["history"]))
        return await self._write(self._step_then_history(step, revision))

    async def _claim(self, claiming: Query) -> tuple[Row, ClaimedPause] | None:
        """A won claim's row, and what it holds: the checkpoint and the history it continues."""
        claimed = await self._with_history(claiming, "base_revision")
        if claimed is None:
            return None
        row, history = claimed
        return row, ClaimedPause(checkpoint_of(row), history)

    def _step_then_history(self, step: Query, revision: str) -> Unit[Started | None]:
        row = (yield step).first()
        if row is None:
            return None
        at = self.HISTORIES.history(session_id=row["session_id"], revision=row[revision])
        read = (yield at).first()
        assert read is not None  # an aggregate always returns its one row
        return row, history_of(read["bodies"])

    async def begin_run(
        self,
        session_id: str,
        run_id: str,
        *,
        now: datetime,
        lease_until: datetime,
        principal: str | None = None,
        base_revision: int | None = None,
        refuse_pending: bool = False,
    ) -> RunStart | None:
        params = {
            "session_id": session_id,
            "run_id": run_id,
            "now": now,
            "lease_until": lease_until,
            "principal": principal,
            "base_revision": base_revision,
            "refuse_pending": refuse_pending,
        }
        started = await self._with_history(self.HISTORIES.begin_run(**params), "revision")
        if started is None:
            return None
        row, history = started
        return RunStart(session_of(row, now=now), history, pending_pause=int(row["pending"]) > 0)

    async def end_run(self, session_id: str, run_id: str) -> None:
        """Clear this run's marker (only this run's); retried like every cleanup."""
        await self._cleanup(END_RUN(session_id=session_id, run_id=run_id))

    async def publish_turn(
        self, session_id: str, base_revision: int, messages: Sequence[MessageBody], run_id: str
    ) -> int:
        # The revision bump clears the run marker in the same statement: only the
        # run that holds it (``run_id``) gets this far.
        return await self._write(_append(session_id, base_revision, messages, ending_run=True))

    # pauses and checkpoints ----------------------------------------------

    async def record_pause(
        self,
        pause: PauseRecord,
        checkpoint: CheckpointRecord,
        *,
        supersedes: str | None = None,
        run_id: str | None = None,
    ) -> None:
        def record() -> Unit[None]:
            replaced: str | None = None
            if run_id is not None:
                # Only the run that holds the session may record its pause: one whose
                # marker lapsed (or was lost) while it ran records nothing.
                ended = yield END_RUN(session_id=pause.session_id, run_id=run_id)
                if ended.rowcount != 1:
                    raise run_lost(pause.session_id)
            if supersedes is not None:
                outcome = {"status": "paused", "pause_id": pause.pause_id}
                row = (
                    yield SUPERSEDE(
                        session_id=pause.session_id,
                        claim_id=supersedes,
                        outcome=json_text(outcome),
                    )
                ).first()
                if row is None:
                    raise PauseAbandoned(
                        "the claim this turn resumed was lost before its second pause "
                        "could be recorded",
                        claim_id=supersedes,
                    )
                replaced = row["pause_id"]
            yield INSERT_PAUSE(**pause_params(pause, checkpoint, supersedes=replaced))

        await self._write(record())

    async def get_pause(self, pause_id: str) -> PauseRecord | None:
        return _pause_or_none(await self._read_one(GET_PAUSE(pause_id=pause_id)))

    async def load_checkpoint(self, pause_id: str) -> CheckpointRecord | None:
        row = (await self._read_one(LOAD_CHECKPOINT(pause_id=pause_id))).first()
        return None if row is None else checkpoint_of(row)

    async def claim_pause(self, claim: Claim, *, now: datetime) -> ClaimedPause | None:
        won = await self._claim(self.HISTORIES.claim(**claim_params(claim, now=now)))
        return None if won is None else won[1]

    async def claim_own_pause(
        self, claim: Claim, *, agent: str, kinds: frozenset[InteractionKind], now: datetime
    ) -> OwnClaim | None:
        if not kinds:
            return None  # no pause is of none of the kinds
        params = own_claim_params(claim, agent=agent, kinds=kinds, now=now)
        won = await self._claim(self.HISTORIES.own_claims[len(kinds)](**params))
        return None if won is None else OwnClaim(pause_of(won[0]), won[1])

    async def claimed_pause(self, session_id: str, claim_id: str) -> PauseRecord | None:
        claimed = CLAIMED_PAUSE(session_id=session_id, claim_id=claim_id)
        return _pause_or_none(await self._read_one(claimed))

    async def renew_claim(self, session_id: str, claim_id: str, lease_until: datetime) -> bool:
        renew = RENEW_CLAIM(session_id=session_id, claim_id=claim_id, lease_until=lease_until)
        return (await self._write_one(renew)).rowcount == 1

    async def publish_resume(
        self, session_id: str, claim_id: str, messages: Sequence[MessageBody], answer: str
    ) -> int:
        def publish() -> Unit[int]:
            outcome = completed_outcome(answer)
            row = (
                yield PUBLISH_PAUSE(session_id=session_id, claim_id=claim_id, outcome=outcome)
            ).first()
            if row is None:
                raise claim_lapsed(claim_id)
            # A revision conflict raised here rolls the pause update back with it.
            return (yield from _append(session_id, int(row["base_revision"]), messages))

        return await self._write(publish())

    async def abandon_claim(self, session_id: str, claim_id: str) -> bool:
        """Move this claim's pause to ``abandoned``; false if it already left ``claimed``.

        A failed turn's cleanup: retried while the store is unavailable, then
        left to the sweeper and the lease.
        """
        return await self._cleanup(ABANDON_CLAIM(session_id=session_id, claim_id=claim_id)) == 1

    async def abandon_pending(self, session_id: str) -> int:
        return (await self._write_one(ABANDON_PENDING(session_id=session_id))).rowcount

    async def open_pause(self, session_id: str) -> PauseRecord | None:
        return _pause_or_none(await self._read_one(OPEN_PAUSE(session_id=session_id)))

    async def session_pauses(self, session_id: str) -> list[PauseRecord]:
        result = await self._read_one(SESSION_PAUSES(session_id=session_id))
        return [pause_of(row) for row in result.rows]

    async def list_pauses(
        self,
        state: PauseState,
        *,
        principal: str,
        scopes: frozenset[str],
        limit: int = 100,
    ) -> list[PauseRecord]:
        """Pauses in ``state`` that ``principal`` may answer, oldest first."""
        params: dict[str, Any] = {"state": state.value, "limit": limit}
        where = "state = :state"
        if "*" not in scopes:
            mine = "(audience IS NULL AND principal = :principal)"
            params["principal"] = principal
            names = [f"scope_{i}" for i in range(len(scopes))]
            params.update(zip(names, sorted(scopes), strict=True))
            if names:
                mine += f" OR audience IN ({', '.join(':' + n for n in names)})"
            where += f" AND ({mine})"
        query = Statement(
            f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses WHERE {where}"
            " ORDER BY created_at LIMIT :limit"
        )
        result = await self._read_one(query(**params))
        return [pause_of(row) for row in result.rows]

    async def sweep(self, now: datetime) -> SweepReport:
        """Expire stale pending pauses and abandon claims whose lease ran out.

        Rows another transaction holds (a claim being won, a lease being renewed,
        a publish) are skipped rather than waited for (``SKIP LOCKED`` on
        PostgreSQL; SQLite's writers never overlap): a sweep never blocks a turn,
        and sweepers on many workers never deadlock on each other.
        """
        expire, abandon = sweep_statements(self.LOCK_FOR_SWEEP)

        def sweep() -> Unit[SweepReport]:
            expired = (yield expire(now=now)).rowcount
            abandoned = (yield abandon(now=now)).rowcount
            return SweepReport(expired=expired, abandoned=abandoned)

        return await self._write(sweep())

    async def prune(
        self, *, cutoff: datetime, now: datetime, batch: int, keep_answered: bool
    ) -> PruneReport:
        unit = prune_batch(cutoff=cutoff, now=now, batch=batch, keep_answered=keep_answered)
        return await self._write(unit)
