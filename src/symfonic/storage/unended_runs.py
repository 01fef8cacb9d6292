"""Run markers this worker could not clear, cleared by its next sweep the store answers.

A first turn that ends without publishing or pausing clears its run marker
(:func:`symfonic.storage.runs.end_run`), retried for a few seconds. When the
store stays away longer, the marker would hold its session until its run lease
ran out, ten minutes by default, though the turn is long over. So the store
remembers each clear that failed, and each sweep clears them first, in one
transaction, before its other work: once the store is back, the session takes
turns again after at most one sweep. A run whose marking itself failed is
remembered too, since its statement may have committed with only the reply lost.

Why a record of failed clears and not a short lease renewed by the running turn,
which another worker's sweeper could see lapse: the worker that ran the turn is
the only one that knows it ended, and a failed clear is how a finished turn's
marker outlives it while that worker lives. A renewed lease would have to be as
short as a sweep (seconds) to free the session within one sweep of the outage,
costing every running turn a write every few seconds, and taking the session
from a live turn whose model call streams nothing for that long. A worker that
dies takes its record with it; its markers last their run lease, which is what
the lease is for (``SymfonicAgent(run_lease=...)``).

Each clear is keyed by the run's own id, so clearing a marker another turn has
since replaced, or one already cleared, changes nothing; a failed turn's
``turn.failed`` is owed in the same transaction, once however often it runs.

The record is bounded (``LIMIT``): a long outage under heavy traffic owes a
clear for every turn refused meanwhile, most of which never reached the
database. Past the bound a marker is left to its lease, and the log says so.
"""

from __future__ import annotations

import logging

from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.storage.runs import END_RUN
from symfonic.storage.transactions import Connection, SqlTransactions
from symfonic.storage.webhooks import owe_failed_turn

logger = logging.getLogger(__name__)

# Markers owed a clear at most; each costs a few hundred bytes.
LIMIT = 10_000


class UnendedRuns:
    """The ``(session_id, run_id)`` markers owed a clear, with the failure each turn owes."""

    def __init__(self) -> None:
        self._owed: dict[tuple[str, str], FailedTurn | None] = {}

    def __len__(self) -> int:
        return len(self._owed)

    def owe(self, session_id: str, run_id: str, failure: FailedTurn | None = None) -> None:
        if len(self._owed) >= LIMIT:
            logger.warning(
                "%d run markers already wait for the store to come back; session %s's is "
                "left to its run lease",
                LIMIT,
                session_id,
            )
            return
        self._owed[(session_id, run_id)] = failure

    async def clear(self, store: SqlTransactions) -> int:
        """Clear every marker owed, in one transaction; how many were still set.

        If the store is still away the record stays as it was and the error
        propagates (the sweep fails, and the next one tries again).
        """
        if not self._owed:
            return 0
        owed = dict(self._owed)
        end_run = END_RUN[store.dialect]

        async def clear_all(connection: Connection) -> int:
            cleared = 0
            for (session_id, run_id), failure in owed.items():
                params = {"session_id": session_id, "run_id": run_id}
                cleared += await connection.count(end_run, params)
                if failure is not None:
                    await owe_failed_turn(connection, failure)
            return cleared

        cleared = await store.transaction(clear_all)
        for key in owed:
            self._owed.pop(key, None)
        return cleared
