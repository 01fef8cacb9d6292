"""The sweep: pending pauses past their expiry expired, claims past their lease abandoned, each
batch one conditional `UPDATE`, after the owed cleanups and due escalations are written.
"""

from __future__ import annotations

from datetime import datetime

from symfonic.core.contracts.pauses import SweepReport
from symfonic.core.telemetry import logs, store_spans
from symfonic.storage.owed_cleanups import Kind
from symfonic.storage.readdressing import escalate_due
from symfonic.storage.statements import Dialect, Statement
from symfonic.storage.transactions import Connection, SqlTransactions

# Pauses a sweep moves in one transaction: a long backlog (10k pauses expiring at
# once) becomes many short transactions, so turns' writes interleave with it. On
# SQLite a write that comes during a batch waits for it: 100 take about 10 ms
# on a quiet machine.
SWEEP_BATCH = 100


def _stale(dialect: Dialect, new_state: str, state: str, due_by: str) -> Statement:
    """One batch of ``state`` pauses whose ``due_by`` time has come moved to ``new_state``.

    The batch is picked through the ``(state, due_by)`` index, then updated by key;
    the update's recheck that a row is still due is wrapped in ``coalesce`` so no
    index serves it and a batch costs its own rows (matched on the due index, a
    never-analysed PostgreSQL table joins every due pause to the batch row by row).
    PostgreSQL takes the batch as an array: a ``LIMIT … FOR UPDATE SKIP LOCKED``
    subquery under ``IN`` may run again per row and move more than a batch.
    """
    batch = f"SELECT pause_id FROM symfonic_pauses WHERE state = '{state}' AND {due_by} <= :now"
    still_due = f"coalesce(state, state) = '{state}' AND coalesce({due_by}, {due_by}) <= :now"
    update = f"UPDATE symfonic_pauses SET state = '{new_state}' WHERE"
    if dialect is Dialect.POSTGRESQL:
        return Statement(
            f"{update} pause_id = ANY(ARRAY({batch} LIMIT :batch FOR UPDATE SKIP LOCKED))"
            f" AND {still_due}"
        )
    return Statement(f"{update} pause_id IN ({batch} LIMIT :batch) AND {still_due}")


EXPIRE = {d: _stale(d, "expired", "pending", "expires_at") for d in Dialect}
ABANDON_LAPSED = {d: _stale(d, "abandoned", "claimed", "lease_until") for d in Dialect}


class SqlPauseSweep(SqlTransactions):
    """The sweep of the port's `PauseStore`."""

    async def sweep(self, now: datetime) -> SweepReport:
        """Expire stale pending pauses and abandon lapsed claims, after the owed cleanups
        and the escalation steps due; held rows are skipped, never waited for (docs/storage.md).
        """
        # Cleanups owed since the store could not write go first: a failed turn's
        # claim or session is released within one sweep of writes working again.
        settled = await self.owed.settle()
        # Escalation before expiry: a step due now is applied while its pause is pending.
        escalated = await escalate_due(self, now)
        expired = await _in_batches(self, EXPIRE[self.dialect], now)
        abandoned = await _in_batches(self, ABANDON_LAPSED[self.dialect], now)
        report = SweepReport(
            expired,
            abandoned,
            runs_ended=settled[Kind.END_RUN],
            escalated=len(escalated),
            escalations=tuple(escalated),
        )
        logs.swept(report)
        if self.traced:
            store_spans.swept(report)
        return report


async def _in_batches(store: SqlTransactions, statement: Statement, now: datetime) -> int:
    params = {"now": now, "batch": SWEEP_BATCH}

    async def one_batch(connection: Connection) -> int:
        return await connection.count(statement, params)

    moved = 0
    while True:
        count = await store.background_transaction(one_batch, "sweep")
        moved += count
        if count < SWEEP_BATCH:
            return moved
