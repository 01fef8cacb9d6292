"""Runs and their kept events, in SQL both databases accept; docs/runs.md says what is kept.

Each append is one transaction that locks the run's row and numbers its events after the
count there, so numbers never collide; on SQLite a watch polls for a commit, then the newest id.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from datetime import datetime
from typing import Any, ClassVar

from symfonic.core.contracts.run_events import (
    CANCELLED,
    EVENT_TYPES,
    NewRun,
    RunEvent,
    RunRecord,
    RunState,
    coalesced,
    kept_rows,
)
from symfonic.core.contracts.types import Event
from symfonic.storage.history import CANCELLED_MARK
from symfonic.storage.pause_changes import polled
from symfonic.storage.pause_writes import ABANDON_CLAIM
from symfonic.storage.rows import aware
from symfonic.storage.statements import (
    UNSYNCED,
    UNSYNCED_COLUMN,
    Dialect,
    Row,
    Statement,
    first,
    json_text,
    json_value,
)
from symfonic.storage.transactions import Connection, SqlTransactions

# The channel appends and ends notify on, with the run's id (PostgreSQL).
RUN_CHANNEL = "symfonic_run_events"

_BEGIN = (
    "INSERT INTO symfonic_runs (run_id, session_id, principal, audience, pause_id, state,"
    " created_at, lease_until, events, dropped) VALUES (:run_id, :session_id, :principal,"
    " :audience, :pause_id, 'running', :created_at, :lease_until, :events, 0)"
)
# A no-op update: it locks the run's row on PostgreSQL and reads its counts.
_COUNTS = (
    "UPDATE symfonic_runs SET events = events WHERE run_id = :run_id AND state = 'running'"
    " RETURNING events, dropped"
)
# A run's own writes (begun, appended, ended) commit without waiting for the disk: on
# PostgreSQL by their first statement, on SQLite by their transaction's synchronous.
BEGIN = {
    Dialect.SQLITE: Statement(_BEGIN),
    Dialect.POSTGRESQL: Statement(f"{UNSYNCED} {_BEGIN} RETURNING {UNSYNCED_COLUMN}"),
}
COUNTS = {
    Dialect.SQLITE: Statement(_COUNTS),
    Dialect.POSTGRESQL: Statement(f"{UNSYNCED} {_COUNTS}, {UNSYNCED_COLUMN}"),
}
RENEW = Statement(
    "UPDATE symfonic_runs SET lease_until = :lease_until"
    " WHERE run_id = :run_id AND state = 'running'"
)
INSERT_EVENT = Statement(
    "INSERT INTO symfonic_run_events (run_id, seq, type, data) VALUES (:run_id, :seq, :type, :data)"
)
# A write's last statement: the run's counts (and, ending it, its end), which on
# PostgreSQL also notifies its watchers at commit.
_COUNTED = "UPDATE symfonic_runs SET events = :events, dropped = :dropped"
_ENDED = f"{_COUNTED}, state = :state, outcome = :outcome, ended_at = :at"
_NOTIFIED = f" WHERE run_id = :run_id RETURNING pg_notify('{RUN_CHANNEL}', :run_id) AS notified"
SET_COUNTS = {
    Dialect.SQLITE: Statement(f"{_COUNTED} WHERE run_id = :run_id"),
    Dialect.POSTGRESQL: Statement(_COUNTED + _NOTIFIED),
}
END = {
    Dialect.SQLITE: Statement(f"{_ENDED} WHERE run_id = :run_id"),
    Dialect.POSTGRESQL: Statement(_ENDED + _NOTIFIED),
}
# Cancelling: the run, while its lease holds, then what its turn would settle with.
CANCEL = Statement(
    "UPDATE symfonic_runs SET state = 'cancelled', ended_at = :at, events = events + 1"
    " WHERE run_id = :run_id AND state = 'running' AND lease_until >= :at"
    " RETURNING session_id, pause_id, events"
)
# The first turn's marker, lapsed at once (the session takes new turns) but left
# saying this run was cancelled, which its publish checks.
TAKE_MARKER = Statement(
    "UPDATE symfonic_sessions SET run_id = :cancelled, run_lease = :at"
    " WHERE session_id = :session_id AND run_id = :run_id"
)
NOTIFY = Statement(f"SELECT pg_notify('{RUN_CHANNEL}', :run_id) AS notified")
RUN_COLUMNS = (
    "run_id, session_id, principal, audience, pause_id, state, outcome, created_at,"
    " ended_at, lease_until, events, dropped"
)
RECORD = Statement(f"SELECT {RUN_COLUMNS} FROM symfonic_runs WHERE run_id = :run_id")
# A session's run in progress, by the index on session_id (a session has few runs
# kept): one whose turn still holds the session, by its run marker (a first turn)
# or its claim (a resume). A turn settles before its run's end is recorded, so a
# run that ended in all but its row is not taken for one in progress.
RUNNING = Statement(
    f"SELECT {RUN_COLUMNS} FROM symfonic_runs r WHERE r.session_id = :session_id"
    " AND r.state = 'running' AND r.lease_until >= :now AND (EXISTS (SELECT 1 FROM"
    " symfonic_sessions s WHERE s.session_id = r.session_id AND s.run_id = r.run_id"
    " AND s.run_lease >= :now) OR EXISTS (SELECT 1 FROM symfonic_pauses p"
    " WHERE p.pause_id = r.pause_id AND p.state = 'claimed' AND p.claim_id = r.run_id))"
    " ORDER BY r.created_at DESC LIMIT 1"
)
AFTER = Statement(
    "SELECT seq, type, data FROM symfonic_run_events WHERE run_id = :run_id AND seq > :after"
    " ORDER BY seq LIMIT :limit"
)
NEWEST = Statement("SELECT max(id) AS newest FROM symfonic_run_events")
RUNS_BETWEEN = Statement(
    "SELECT DISTINCT run_id FROM symfonic_run_events WHERE id > :after AND id <= :upto"
)
DUE = Statement(
    "SELECT run_id FROM symfonic_runs WHERE (state <> 'running' AND ended_at < :before)"
    " OR (state = 'running' AND lease_until < :before) ORDER BY created_at LIMIT :batch"
)


def record_of(row: Row) -> RunRecord:
    created, lease = aware(row["created_at"]), aware(row["lease_until"])
    assert created is not None and lease is not None
    return RunRecord(
        run_id=str(row["run_id"]),
        session_id=str(row["session_id"]),
        principal=str(row["principal"]),
        audience=row["audience"],
        pause_id=row["pause_id"],
        state=RunState(row["state"]),
        outcome=json_value(row["outcome"]),
        created_at=created,
        ended_at=aware(row["ended_at"]),
        lease_until=lease,
        events=int(row["events"]),
        dropped=int(row["dropped"]),
    )


def event_of(row: Row) -> RunEvent:
    kind = EVENT_TYPES[str(row["type"])]
    return RunEvent(position=int(row["seq"]), event=kind.model_validate_json(row["data"]))


class _Settled(Exception):
    """A cancel that came after its turn settled: its transaction rolls back."""


def event_row(run_id: str, seq: int, event: Event) -> dict[str, Any]:
    return {"run_id": run_id, "seq": seq, "type": event.type, "data": event.model_dump_json()}


class SqlRunEvents(SqlTransactions):
    """The port's `RunEventLog`, in SQL."""

    # Another worker's follower hears of an event within this (SQLite: a data_version
    # check of a few microseconds, made only while the worker watches).
    RUN_POLL_SECONDS: ClassVar[float] = 0.01

    async def begin_run_log(self, run: NewRun, first: Event | None = None) -> None:
        params = {
            "run_id": run.run_id,
            "session_id": run.session_id,
            "principal": run.principal,
            "audience": run.audience,
            "pause_id": run.pause_id,
            "created_at": run.created_at,
            "lease_until": run.lease_until,
            "events": 0 if first is None else 1,
        }

        async def begin(connection: Connection) -> None:
            await connection.rows(BEGIN[self.dialect], params)
            if first is not None:  # nobody follows a run before it exists: no notification
                await connection.count(INSERT_EVENT, event_row(run.run_id, 1, first))

        await self.unsynced_transaction(begin, "begin_run_log")

    async def renew_run_log(self, run_id: str, lease_until: datetime) -> bool:
        return (
            await self.write_count(
                RENEW, {"run_id": run_id, "lease_until": lease_until}, "renew_run_log"
            )
            == 1
        )

    async def append_run_events(self, run_id: str, events: Sequence[Event]) -> int:
        async def append(connection: Connection) -> int:
            return await self._append(connection, run_id, events) or 0

        return await self.unsynced_transaction(append, "append_run_events")

    async def _append(
        self,
        connection: Connection,
        run_id: str,
        events: Sequence[Event],
        end: dict[str, Any] | None = None,
    ) -> int | None:
        """Keep ``events`` after the run's last, and ``end`` it if given; ``None`` (and
        nothing kept) when it is not running."""
        counts = first(await connection.rows(COUNTS[self.dialect], {"run_id": run_id}))
        if counts is None:
            return None  # not running: its worker lost it, or it ended
        stored, dropped = int(counts["events"]), int(counts["dropped"])
        merged = coalesced(events)
        keep = kept_rows(merged, stored)
        rows = [event_row(run_id, stored + n, e) for n, e in enumerate(keep, start=1)]
        if rows:
            await connection.each(INSERT_EVENT, rows)
        skipped = len(merged) - len(keep)
        counted = {"run_id": run_id, "events": stored + len(keep), "dropped": dropped + skipped}
        last = SET_COUNTS if end is None else END
        await connection.rows(last[self.dialect], {**counted, **(end or {})})
        return len(keep)

    async def end_run_log(
        self,
        run_id: str,
        state: RunState,
        outcome: dict[str, Any] | None,
        at: datetime,
        last: Sequence[Event] = (),
    ) -> bool:
        """See the role: ``last`` and the end are one transaction, so whoever reads
        the run's final event also reads it ended."""
        end = {"state": state.value, "outcome": json_text(outcome), "at": at}

        async def ending(connection: Connection) -> bool:
            return await self._append(connection, run_id, last, end) is not None

        return await self.unsynced_transaction(ending, "end_run_log")

    async def cancel_run(self, run_id: str, at: datetime) -> bool:
        """See the role; the run's row is updated first, which locks it (PostgreSQL)."""

        async def cancel(connection: Connection) -> bool:
            row = first(await connection.rows(CANCEL, {"run_id": run_id, "at": at}))
            if row is None:
                return False
            session_id, pause_id = str(row["session_id"]), row["pause_id"]
            if pause_id is None:
                params = {"session_id": session_id, "run_id": run_id, "at": at}
                params["cancelled"] = CANCELLED_MARK + run_id
                took = await connection.count(TAKE_MARKER, params)
            else:
                params = {"session_id": session_id, "claim_id": run_id}
                took = await connection.count(ABANDON_CLAIM, params)
            if took != 1:
                raise _Settled  # the turn settled first: undo the run's update
            await connection.each(INSERT_EVENT, [event_row(run_id, int(row["events"]), CANCELLED)])
            await self._notify(connection, run_id)
            return True

        try:
            return await self.transaction(cancel, "cancel_run")
        except _Settled:
            return False

    async def _notify(self, connection: Connection, run_id: str) -> None:
        if self.dialect is Dialect.POSTGRESQL:
            await connection.rows(NOTIFY, {"run_id": run_id})

    async def run_record(self, run_id: str) -> RunRecord | None:
        row = first(await self.read_rows(RECORD, {"run_id": run_id}, "run_record"))
        return None if row is None else record_of(row)

    async def running_run(self, session_id: str, now: datetime) -> RunRecord | None:
        """The port's `SessionRuns`."""
        row = first(
            await self.read_rows(RUNNING, {"session_id": session_id, "now": now}, "running_run")
        )
        return None if row is None else record_of(row)

    async def run_events_after(self, run_id: str, position: int, *, limit: int) -> list[RunEvent]:
        params = {"run_id": run_id, "after": position, "limit": limit}
        return await self.read_converted(
            AFTER, params, lambda rows: [event_of(r) for r in rows], "run_events_after"
        )

    async def _newest_run_event(self) -> int:
        row = first(await self.read_rows(NEWEST, {}, "watch_run_events"))
        return 0 if row is None or row["newest"] is None else int(row["newest"])

    async def _runs_between(self, after: int, upto: int) -> tuple[list[str], int]:
        rows = await self.read_rows(
            RUNS_BETWEEN, {"after": after, "upto": upto}, "watch_run_events"
        )
        return [str(row["run_id"]) for row in rows], upto

    def watch_run_events(self) -> AsyncGenerator[list[str], None]:
        """Poll the largest event id; each rise names the runs of the new rows."""
        return polled(self._newest_run_event, self._runs_between, self.RUN_POLL_SECONDS)

    async def prune_run_events(self, ended_before: datetime, batch: int) -> int:
        async def prune(connection: Connection) -> int:
            due = await connection.rows(DUE, {"before": ended_before, "batch": batch})
            run_ids = [str(row["run_id"]) for row in due]
            if not run_ids:
                return 0
            names = {f"r{index}": run_id for index, run_id in enumerate(run_ids)}
            listed = ", ".join(f":{name}" for name in names)
            await connection.count(
                Statement(f"DELETE FROM symfonic_run_events WHERE run_id IN ({listed})"), names
            )
            await connection.count(
                Statement(f"DELETE FROM symfonic_runs WHERE run_id IN ({listed})"), names
            )
            return len(run_ids)

        return await self.background_transaction(prune, "prune_run_events")
