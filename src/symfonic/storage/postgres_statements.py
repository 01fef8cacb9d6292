"""PostgreSQL's steps of a turn: each one statement, one round trip.

On PostgreSQL every statement is a round trip to the server, and an explicit
transaction costs two more (``BEGIN``, ``COMMIT``). Starting a turn and claiming
a pause are one statement for both databases already
(:mod:`symfonic.storage.history_statements`; here the history is a ``json_agg``);
the steps that end a turn are units of work of several statements in
:class:`SqlStore`, and are written here as one statement each, with
data-modifying ``WITH`` clauses, so a cycle makes one round trip per step and
with the round trips go most of its latency and of the client's CPU. One
statement is one transaction: it commits whole or not at all, exactly as the
unit of work it replaces.

The conditions are the same as :class:`SqlStore`'s, in SQL. Publishing a resumed
turn must not mark its pause published unless the session is still at the
pause's base revision, and the clauses of one statement all read one snapshot,
so it first locks the claimed pause and the session row (``FOR UPDATE``, which
under READ COMMITTED waits for a concurrent writer and then reads its commit):
the revision it compares is then the newest, and no other publisher can move it
before this statement commits. Whatever the statement did not do is reported in
its one result row, and raised here as the unit of work would have raised it.

A second pause (one that supersedes a claim) is rare and keeps the unit of work.

A run marker is not worth waiting for the disk: setting it (``begin_run``) and
clearing it after a failed turn (``end_run``) commit with ``synchronous_commit``
off, for that transaction only, so they return before the WAL is flushed. A
server crash may then forget a marker, which is safe because the marker guards
nothing alone: a pause is recorded only by the run that still holds it (and
clears it in the same statement), and a turn is published only at the revision
it started from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from symfonic.core.contracts.store import CheckpointRecord, PauseRecord
from symfonic.core.messages import MessageBody
from symfonic.storage.history_statements import history_in_the_step
from symfonic.storage.queries import (
    DROP_CHECKPOINT,
    END_RUN,
    INSERT_PAUSE,
    NEXT_REVISION_ENDING_RUN,
    PAUSE_INSERT,
    completed_outcome,
    insert_row,
    pause_params,
)
from symfonic.storage.sql_store import SqlStore, claim_lapsed, revision_conflict, run_lost
from symfonic.storage.statements import Statement, json_text


def _history(session: str, revision: str) -> str:
    """A session's committed bodies up to a revision, joined by commas (NULL when none)."""
    return (
        "(SELECT string_agg(m.body::text, ',' ORDER BY m.seq) FROM symfonic_messages m"
        f" WHERE m.session_id = {session} AND m.revision <= {revision})"
    )


def _without_waiting_for_the_disk(statement: Statement) -> Statement:
    """``statement`` committed with ``synchronous_commit`` off, for its transaction only.

    ``set_config(…, true)`` is ``SET LOCAL``; referencing it from ``RETURNING``
    runs it inside the statement, before the commit it applies to.
    """
    durability = "(SELECT setting FROM durability) AS durability"
    text = statement.text
    tail = f", {durability}" if " RETURNING " in text else f" RETURNING {durability}"
    return Statement(
        "WITH durability AS (SELECT set_config('synchronous_commit', 'off', true) AS setting) "
        + text
        + tail
    )


_HISTORIES = history_in_the_step(_history)
HISTORIES = replace(_HISTORIES, begin_run=_without_waiting_for_the_disk(_HISTORIES.begin_run))
END_RUN_WITHOUT_WAITING = _without_waiting_for_the_disk(END_RUN)


# The turn's messages, appended after the row ``bumped`` returns, numbered on
# from the session's message count.
_APPENDED = (
    "appended AS (INSERT INTO symfonic_messages (session_id, seq, revision, body)"
    " SELECT :session_id, bumped.message_count - :added + appended.ord - 1, bumped.revision,"
    " CAST(appended.body AS JSON)"
    " FROM bumped, unnest(CAST(:bodies AS TEXT[])) WITH ORDINALITY AS appended(body, ord))"
)

PUBLISH_TURN = Statement(
    f"WITH bumped AS ({NEXT_REVISION_ENDING_RUN.text}), {_APPENDED} SELECT revision FROM bumped"
)

# A pause recorded by the run that holds the session (it clears the marker), and
# only by it: both inserts read their one row from ``ended``.
RECORD_RUN_PAUSE = Statement(
    f"WITH ended AS ({END_RUN.text} RETURNING session_id),"
    f" pause AS ({insert_row(*PAUSE_INSERT, only_if='ended').text})"
    " SELECT count(*) AS recorded FROM ended"
)

PUBLISH_RESUME = Statement(
    "WITH claimed AS (SELECT pause_id, base_revision FROM symfonic_pauses"
    " WHERE session_id = :session_id AND claim_id = :claim_id AND state = 'claimed'"
    " FOR UPDATE),"
    " locked AS (SELECT revision FROM symfonic_sessions WHERE session_id = :session_id"
    " FOR UPDATE),"
    " published AS (UPDATE symfonic_pauses"
    f" SET state = 'published', outcome = :outcome, {DROP_CHECKPOINT}"
    " FROM claimed, locked WHERE symfonic_pauses.pause_id = claimed.pause_id"
    " AND locked.revision = claimed.base_revision RETURNING symfonic_pauses.pause_id),"
    " bumped AS (UPDATE symfonic_sessions"
    " SET revision = revision + 1, message_count = message_count + :added"
    " WHERE session_id = :session_id AND EXISTS (SELECT 1 FROM published)"
    " RETURNING revision, message_count),"
    f" {_APPENDED}"
    " SELECT (SELECT revision FROM bumped) AS revision,"
    " (SELECT base_revision FROM claimed) AS base_revision"
)


def _texts(bodies: Sequence[MessageBody]) -> list[str | None]:
    return [json_text(body) for body in bodies]


class PostgresStatements(SqlStore):
    """The steps of a turn, one round trip each."""

    HISTORIES = HISTORIES

    async def end_run(self, session_id: str, run_id: str) -> None:
        await self._cleanup(END_RUN_WITHOUT_WAITING(session_id=session_id, run_id=run_id))

    async def publish_turn(
        self, session_id: str, base_revision: int, messages: Sequence[MessageBody], run_id: str
    ) -> int:
        publish = PUBLISH_TURN(
            session_id=session_id,
            base_revision=base_revision,
            added=len(messages),
            bodies=_texts(messages),
        )
        row = (await self._write_one(publish)).first()
        if row is None:
            raise revision_conflict(session_id, base_revision)
        return int(row["revision"])

    async def record_pause(
        self,
        pause: PauseRecord,
        checkpoint: CheckpointRecord,
        *,
        supersedes: str | None = None,
        run_id: str | None = None,
    ) -> None:
        if supersedes is not None:
            await super().record_pause(pause, checkpoint, supersedes=supersedes, run_id=run_id)
            return
        params = pause_params(pause, checkpoint, supersedes=None)
        if run_id is None:
            await self._write_one(INSERT_PAUSE(**params))
            return
        row = (await self._write_one(RECORD_RUN_PAUSE(**params, run_id=run_id))).first()
        if row is None or row["recorded"] != 1:
            raise run_lost(pause.session_id)

    async def publish_resume(
        self, session_id: str, claim_id: str, messages: Sequence[MessageBody], answer: str
    ) -> int:
        publish = PUBLISH_RESUME(
            session_id=session_id,
            claim_id=claim_id,
            outcome=completed_outcome(answer),
            added=len(messages),
            bodies=_texts(messages),
        )
        row = (await self._write_one(publish)).first()
        assert row is not None  # a SELECT of two scalar subqueries always has its row
        if row["base_revision"] is None:
            raise claim_lapsed(claim_id)
        if row["revision"] is None:
            raise revision_conflict(session_id, int(row["base_revision"]))
        return int(row["revision"])
