"""The storage port in SQL: one class per role over the same transactions, for both adapters;
where the databases differ, both forms stand side by side (docs/storage.md, on isolation).
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
