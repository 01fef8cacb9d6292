"""A session's committed history: read in the transaction of the step that starts a turn, so no
publish comes between, and appended by a publish only from the revision the turn started from
(docs/storage.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from symfonic.core.contracts.errors import RevisionConflict
from symfonic.core.messages import MessageBody
from symfonic.core.telemetry.store_spans import Then
from symfonic.storage.statements import Dialect, Params, Row, Statement, first, json_text
from symfonic.storage.transactions import Connection, SqlTransactions

T = TypeVar("T")


def postgres_history(session: str, revision: str) -> str:
    """SQL for a session's bodies up to a revision, joined by commas (NULL when none)."""
    return (
        "(SELECT string_agg(m.body::text, ',' ORDER BY m.seq) FROM symfonic_messages m"
        f" WHERE m.session_id = {session} AND m.revision <= {revision})"
    )


def sqlite_history(session: str, revision: str) -> str:
    """As `postgres_history`, for SQLite.

    SQLite before 3.44 has no ORDER BY inside an aggregate. It feeds an
    aggregate the rows of an ordered subquery in their order, and never
    flattens such a subquery into it (rule 16 of its query flattener).
    """
    return (
        "(SELECT group_concat(body, ',')"
        " FROM (SELECT m.body FROM symfonic_messages m"
        f" WHERE m.session_id = {session} AND m.revision <= {revision} ORDER BY m.seq))"
    )


HISTORY = {
    Dialect.SQLITE: Statement(f"SELECT {sqlite_history(':session_id', ':revision')} AS bodies"),
    Dialect.POSTGRESQL: Statement(
        f"SELECT {postgres_history(':session_id', ':revision')} AS bodies"
    ),
}


def history_of(value: str | None) -> list[MessageBody]:
    """The bodies of a history column: JSON bodies joined by commas, or NULL for none."""
    if value is None:
        return []
    bodies: list[MessageBody] = json.loads(f"[{value}]")
    return bodies


async def read_history(
    connection: Connection, dialect: Dialect, session_id: str, revision: int
) -> list[MessageBody]:
    (row,) = await connection.rows(
        HISTORY[dialect], {"session_id": session_id, "revision": revision}
    )
    return history_of(row["bodies"])


async def with_history(
    store: SqlTransactions,
    steps: Mapping[Dialect, Statement],
    params: Params,
    revision: str,
    operation: str,
    attributes: Mapping[str, Any] | None = None,
    then: Then[Row | None] | None = None,
) -> tuple[Row, list[MessageBody]] | None:
    """A step that starts a turn: its row, and the history the turn runs on.

    The history is the step's session's up to the revision in the row's column
    ``revision``. On PostgreSQL the step returns it, in a column ``history``;
    on SQLite it is read after the step, in its transaction. ``None`` if the
    step touched no row.
    """
    step = steps[store.dialect]
    if store.dialect is Dialect.POSTGRESQL:
        rows = await store.write_rows(step, params, operation, attributes, _on_row(then, first))
        row = first(rows)
        return None if row is None else (row, history_of(row["history"]))

    async def step_then_history(connection: Connection) -> tuple[Row, list[MessageBody]] | None:
        row = first(await connection.rows(step, params))
        if row is None:
            return None
        history = await read_history(connection, Dialect.SQLITE, row["session_id"], row[revision])
        return row, history

    return await store.transaction(step_then_history, operation, attributes, _on_row(then, _row))


def _on_row(then: Then[Row | None] | None, row_of: Callable[[T], Row | None]) -> Then[T] | None:
    """``then``, given the step's row out of what the step returned."""
    if then is None:
        return None
    return lambda span, value: then(span, row_of(value))


def _row(started: tuple[Row, list[MessageBody]] | None) -> Row | None:
    return None if started is None else started[0]


def revision_conflict(session_id: str, base_revision: int) -> RevisionConflict:
    return RevisionConflict(
        f"session {session_id} is no longer at revision {base_revision}; "
        "another turn was published first",
        base_revision=base_revision,
    )


_BUMP = (
    "UPDATE symfonic_sessions"
    " SET revision = revision + 1, message_count = message_count + :added{end_run}"
    " WHERE session_id = :session_id AND revision = :base_revision"
    " RETURNING revision, message_count"
)
# Moves the revision on from ``:base_revision``, counting ``:added`` messages.
BUMP = Statement(_BUMP.format(end_run=""))
# The same, for a first turn: its run marker is cleared with it (only the run
# holding the marker publishes; a lost marker lost the revision race too).
# A first turn's publish also ends its run, unless its run was cancelled: a cancel
# leaves ``CANCELLED_MARK`` + the run's id as the marker (symfonic.storage.run_events),
# and a run a new message took the session from is recorded ``cancelled`` or
# ``forgotten`` (symfonic.storage.interrupts), which the publish looks up by its key.
CANCELLED_MARK = "cancelled:"
BUMP_ENDING_RUN_TEXT = _BUMP.format(end_run=", run_id = NULL, run_lease = NULL").replace(
    " RETURNING",
    " AND (run_id IS NULL OR run_id <> :cancelled) AND NOT EXISTS (SELECT 1 FROM"
    " symfonic_runs r WHERE r.run_id = :run_id AND r.state IN ('cancelled', 'forgotten'))"
    " RETURNING",
)
BUMP_ENDING_RUN = Statement(BUMP_ENDING_RUN_TEXT)
INSERT_MESSAGE = Statement(
    "INSERT INTO symfonic_messages (session_id, seq, revision, body)"
    " VALUES (:session_id, :seq, :revision, :body)"
)
# PostgreSQL: the turn's messages (``:bodies``, a text array), appended after the
# row a ``bumped`` clause returns, as one more clause of the same statement.
APPEND_AFTER_BUMP = (
    "appended AS (INSERT INTO symfonic_messages (session_id, seq, revision, body)"
    " SELECT :session_id, bumped.message_count - :added + appended.ord - 1, bumped.revision,"
    " CAST(appended.body AS JSON)"
    " FROM bumped, unnest(CAST(:bodies AS TEXT[])) WITH ORDINALITY AS appended(body, ord))"
)


def body_texts(bodies: Sequence[MessageBody]) -> list[str | None]:
    return [json_text(body) for body in bodies]


async def append(
    connection: Connection,
    session_id: str,
    base_revision: int,
    bodies: Sequence[MessageBody],
    *,
    ending_run: str | None = None,
) -> int:
    """SQLite: move the revision on from ``base_revision`` and append the bodies.

    Part of the caller's transaction; raises RevisionConflict, writing nothing.
    ``ending_run``: the first turn's run id, whose marker the publish clears (and
    which must not have been cancelled).
    """
    bump = BUMP if ending_run is None else BUMP_ENDING_RUN
    params: dict[str, object] = {
        "session_id": session_id,
        "base_revision": base_revision,
        "added": len(bodies),
    }
    if ending_run is not None:
        params["cancelled"] = CANCELLED_MARK + ending_run
        params["run_id"] = ending_run
    row = first(await connection.rows(bump, params))
    if row is None:
        raise revision_conflict(session_id, base_revision)
    revision, start = int(row["revision"]), int(row["message_count"]) - len(bodies)
    if bodies:
        messages = [
            {"session_id": session_id, "seq": start + i, "revision": revision, "body": text}
            for i, text in enumerate(body_texts(bodies))
        ]
        await connection.each(INSERT_MESSAGE, messages)
    return revision
