"""The storage port in SQL, for the SQLite and PostgreSQL adapters alike.

Each role of the port is a class over the same transactions
(:class:`~symfonic.storage.transactions.SqlTransactions`), in the module that
owns it: sessions and first turns (:mod:`symfonic.storage.runs`), a pause's
record and settlements (:mod:`symfonic.storage.pause_writes`), its claim
(:mod:`symfonic.storage.pause_claims`) and sweep
(:mod:`symfonic.storage.pause_sweep`), approval votes
(:mod:`symfonic.storage.approval_votes`), reads and listings of
pauses (:mod:`symfonic.storage.pause_reads`, whose listing queries are
:mod:`symfonic.storage.pause_listing`'s), the record of pause changes
(:mod:`symfonic.storage.pause_changes`), runs and their kept events
(:mod:`symfonic.storage.run_events`), queued messages
(:mod:`symfonic.storage.run_queue`), taking a busy session over
(:mod:`symfonic.storage.interrupts`), the webhook outbox
(:mod:`symfonic.storage.webhooks`, :mod:`symfonic.storage.webhook_destinations`)
retention (:mod:`symfonic.storage.retention`) and the audit trail
(:mod:`symfonic.storage.audit_log`). :class:`SqlStore` is all of
them at once, and nothing else. Where the databases differ, the two forms
stand side by side in the role's module, chosen by the adapter's
:class:`~symfonic.storage.statements.Dialect`; an adapter supplies only how
connections and transactions run (:mod:`symfonic.storage.transactions`).

The isolation level relied on is READ COMMITTED (PostgreSQL's default; the
adapter sets it explicitly so a server configured otherwise cannot change the
outcome of a race). Under it, an ``UPDATE`` that finds its row locked by a
concurrent writer waits, then re-evaluates its ``WHERE`` on the committed
version: of N concurrent claims exactly one still sees ``pending``. A stricter
level would turn those losers into serialisation failures instead of a clean
"not mine". SQLite serialises every writer on its database lock (see
:mod:`symfonic.storage.sqlite`), which gives the same outcome.
"""

from __future__ import annotations

from symfonic.storage.approval_votes import SqlApprovalVotes
from symfonic.storage.audit_log import SqlAuditLog
from symfonic.storage.interrupts import SqlTurnInterrupts
from symfonic.storage.pause_changes import PauseChangeRecord
from symfonic.storage.pause_claims import SqlPauseClaims
from symfonic.storage.pause_reads import SqlPauseListing, SqlPauseReads
from symfonic.storage.pause_sweep import SqlPauseSweep
from symfonic.storage.pause_writes import SqlPauseWrites
from symfonic.storage.readdressing import SqlPauseAddressing
from symfonic.storage.retention import SqlRetention
from symfonic.storage.run_events import SqlRunEvents
from symfonic.storage.run_queue import SqlRunQueue
from symfonic.storage.runs import SqlRuns, SqlSessions
from symfonic.storage.webhook_destinations import SqlWebhookDestinations
from symfonic.storage.webhooks import SqlWebhookDeliveries


class SqlStore(
    SqlSessions,
    SqlRuns,
    SqlPauseWrites,
    SqlPauseClaims,
    SqlPauseSweep,
    SqlPauseReads,
    SqlPauseListing,
    PauseChangeRecord,
    SqlRunEvents,
    SqlRunQueue,
    SqlTurnInterrupts,
    SqlPauseAddressing,
    SqlWebhookDeliveries,
    SqlWebhookDestinations,
    SqlRetention,
    SqlAuditLog,
    SqlApprovalVotes,
):
    """A ``Store`` in SQL, every role at once; adapters supply how transactions run."""
