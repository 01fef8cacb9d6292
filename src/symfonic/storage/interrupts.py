"""Taking a busy session over in one transaction: the holder cancelled in the same lock order as
a run's cancel, then the new run marker set; refused, nothing was cancelled. The old turn cannot
publish after the commit.
"""

from __future__ import annotations

from datetime import datetime

from symfonic.core.contracts.interrupts import Interrupted
from symfonic.core.contracts.run_events import CANCELLED, RunState
from symfonic.core.contracts.sessions import RunRequest, RunStart
from symfonic.storage.history import CANCELLED_MARK, read_history
from symfonic.storage.pause_writes import ABANDON_CLAIM
from symfonic.storage.rows import aware, session_of
from symfonic.storage.run_events import CANCEL, INSERT_EVENT, NOTIFY, event_row
from symfonic.storage.runs import BEGIN_RUN_SYNCED
from symfonic.storage.statements import Dialect, Row, Statement, first
from symfonic.storage.transactions import Connection, SqlTransactions

# How often a takeover is run again when the turn it meant to cancel settled first.
ATTEMPTS = 3

_CLAIMED = (
    "(SELECT p.{column} FROM symfonic_pauses p WHERE p.session_id = :session_id"
    " AND p.state = 'claimed' LIMIT 1)"
)
HOLDER = Statement(
    "SELECT run_id, run_lease, "
    f"{_CLAIMED.format(column='claim_id')} AS claim_id,"
    f" {_CLAIMED.format(column='pause_id')} AS pause_id"
    " FROM symfonic_sessions WHERE session_id = :session_id"
)
# A rollback: the run hidden (its row kept, as what its publish checks, until the
# TTL), its events replaced by the one that wakes its followers and its worker.
FORGET = Statement(
    "UPDATE symfonic_runs SET state = 'forgotten', ended_at = :at, events = 1"
    " WHERE run_id = :run_id AND state = 'running' AND lease_until >= :at"
)
FORGET_EVENTS = Statement("DELETE FROM symfonic_run_events WHERE run_id = :run_id")
# A first turn that kept no run (an attached one) gets a row saying how it ended,
# which its publish checks (symfonic.storage.history.BUMP_ENDING_RUN), and its one
# event. The session is named twice: PostgreSQL types a parameter once, and the
# two uses differ.
GUARD = Statement(
    "INSERT INTO symfonic_runs (run_id, session_id, principal, state, created_at, ended_at,"
    " lease_until, events, dropped) VALUES (:run_id, :session_id, (SELECT principal FROM"
    " symfonic_sessions WHERE session_id = :owning), :state, :at, :at, :at, 1, 0)"
    " ON CONFLICT (run_id) DO NOTHING"
)
RELEASE_MARKER = Statement(
    "UPDATE symfonic_sessions SET run_id = NULL, run_lease = NULL"
    " WHERE session_id = :session_id AND run_id = :run_id"
)


class _AlreadySettled(Exception):
    """The holder settled before the takeover: its transaction rolls back, and runs again."""


class _Refused(Exception):
    """The new turn was refused: its transaction rolls back, cancelling nothing."""


def holder_of(row: Row, now: datetime) -> tuple[str, str | None] | None:
    """What holds the session: (a claim id, its pause), or (a run marker, ``None``)."""
    if row["claim_id"] is not None:
        return str(row["claim_id"]), str(row["pause_id"])
    marker, lease = row["run_id"], aware(row["run_lease"])
    if marker is None or lease is None or lease < now or marker.startswith(CANCELLED_MARK):
        return None
    return str(marker), None


class SqlTurnInterrupts(SqlTransactions):
    """The port's `TurnInterrupts`, in SQL."""

    async def interrupt_turn(self, request: RunRequest, *, forget: bool) -> Interrupted | None:
        # The holder this takeover set out to cancel: the one its caller saw, or its first read.
        meant: list[tuple[str, str | None]] = (
            [] if request.seen_holder is None else [(request.seen_holder, None)]
        )
        for _ in range(ATTEMPTS):
            try:
                interrupted = await self.transaction(
                    lambda c: self._take_over(c, request, forget, meant), "interrupt_turn"
                )
            except _AlreadySettled:
                continue
            except _Refused:
                return None
            self.pause_log.interrupted(request.session_id, interrupted)
            return interrupted
        return None

    async def _take_over(
        self,
        connection: Connection,
        request: RunRequest,
        forget: bool,
        meant: list[tuple[str, str | None]],
    ) -> Interrupted:
        session_id, now = request.session_id, request.now
        row = first(await connection.rows(HOLDER, {"session_id": session_id}))
        holder = None if row is None else holder_of(row, now)
        if holder is not None:
            if meant and holder != meant[0]:
                # Another takeover won the session first: its new turn is not the one
                # this caller saw running, so cancelling it would start two turns.
                raise _Refused
            meant[:] = [holder]
            await self._cancel(connection, session_id, holder, now, forget)
        params = {
            "session_id": session_id,
            "run_id": request.run_id,
            "now": now,
            "lease_until": request.lease_until,
            "principal": request.principal,
            "base_revision": request.base_revision,
            "refuse_pending": request.refuse_pending,
        }
        held = first(await connection.rows(BEGIN_RUN_SYNCED, params))
        if held is None:
            raise _Refused
        session = session_of(held, now=now)
        history = await read_history(connection, self.dialect, session_id, session.revision)
        start = RunStart(session, history, pending_pause=int(held["pending"]) > 0)
        if holder is None:
            return Interrupted(start)
        return Interrupted(start, cancelled_run=holder[0], abandoned_pause=holder[1])

    async def _cancel(
        self,
        connection: Connection,
        session_id: str,
        holder: tuple[str, str | None],
        at: datetime,
        forget: bool,
    ) -> None:
        """The holder's run cancelled (or forgotten), then what its turn would settle with."""
        run_id, pause_id = holder
        params = {"run_id": run_id, "at": at, "session_id": session_id}
        if forget and await connection.count(FORGET, params) == 1:
            await connection.count(FORGET_EVENTS, params)
            await connection.each(INSERT_EVENT, [event_row(run_id, 1, CANCELLED)])
        elif not forget and (run := first(await connection.rows(CANCEL, params))) is not None:
            kept = [event_row(run_id, int(run["events"]), CANCELLED)]
            await connection.each(INSERT_EVENT, kept)
        elif pause_id is None:
            state = RunState.FORGOTTEN if forget else RunState.CANCELLED
            guard = {**params, "state": state.value, "owning": session_id}
            if await connection.count(GUARD, guard) == 1:
                await connection.each(INSERT_EVENT, [event_row(run_id, 1, CANCELLED)])
        if self.dialect is Dialect.POSTGRESQL:
            await connection.rows(NOTIFY, {"run_id": run_id})
        if pause_id is None:
            took = await connection.count(
                RELEASE_MARKER, {"session_id": session_id, "run_id": run_id}
            )
        else:
            took = await connection.count(
                ABANDON_CLAIM, {"session_id": session_id, "claim_id": run_id}
            )
        if took != 1:
            raise _AlreadySettled
