"""The storage port: the sum of small role Protocols, each in a module of its own (the table is
in docs/architecture.md). Every method that changes state is one transaction in the adapter.
"""

from __future__ import annotations

from typing import Protocol

from symfonic.core.contracts.approvals import ApprovalVotes, Ballot, Proposal, VoteOutcome
from symfonic.core.contracts.audit import AuditLog
from symfonic.core.contracts.interrupts import Interrupted, TurnInterrupts
from symfonic.core.contracts.outbox import LeasedDelivery, WebhookOutbox
from symfonic.core.contracts.pause_changes import PauseChange, PauseChangeLog
from symfonic.core.contracts.pause_listing import (
    PauseListing,
    PausePosition,
    PauseQuery,
    PendingCount,
)
from symfonic.core.contracts.pauses import (
    CheckpointRecord,
    Claim,
    ClaimedPause,
    NewPause,
    PauseRecord,
    PauseStore,
    ResumePublish,
    SweepReport,
)
from symfonic.core.contracts.readdressing import PauseAddressing, Reassignment
from symfonic.core.contracts.retention import PruneBatch, PruneReport, RetentionStore
from symfonic.core.contracts.run_events import (
    NewRun,
    RunEvent,
    RunEventLog,
    RunRecord,
    SessionRuns,
)
from symfonic.core.contracts.run_queue import QueuedTurn, QueueHead, RunQueue, TakenTurn
from symfonic.core.contracts.sessions import (
    RunRenewal,
    RunRequest,
    RunStart,
    RunStore,
    SessionRecord,
    SessionStore,
    TurnPublish,
)

__all__ = [
    "ApprovalVotes",
    "AuditLog",
    "Ballot",
    "CheckpointRecord",
    "Claim",
    "ClaimedPause",
    "Interrupted",
    "LeasedDelivery",
    "NewPause",
    "NewRun",
    "PauseAddressing",
    "PauseChange",
    "PauseChangeLog",
    "PauseListing",
    "PausePosition",
    "PauseQuery",
    "PauseRecord",
    "PauseStore",
    "PendingCount",
    "Proposal",
    "PruneBatch",
    "PruneReport",
    "QueueHead",
    "QueuedTurn",
    "Reassignment",
    "ResumePublish",
    "RetentionStore",
    "RunEvent",
    "RunEventLog",
    "RunQueue",
    "RunRecord",
    "RunRenewal",
    "RunRequest",
    "RunStart",
    "RunStore",
    "SessionRecord",
    "SessionRuns",
    "SessionStore",
    "Store",
    "SweepReport",
    "TakenTurn",
    "TurnInterrupts",
    "TurnPublish",
    "VoteOutcome",
    "WebhookOutbox",
]


class Store(
    SessionStore,
    RunStore,
    RunRenewal,
    PauseStore,
    PauseListing,
    PauseChangeLog,
    PauseAddressing,
    RunEventLog,
    RunQueue,
    TurnInterrupts,
    SessionRuns,
    WebhookOutbox,
    RetentionStore,
    AuditLog,
    ApprovalVotes,
    Protocol,
):
    """Every role at once, and the lifecycle: the port every adapter implements.

    Open it with ``async with``.
    """

    url: str

    @property
    def write_failure(self) -> str | None:
        """Why the last write failed for a reason that lasts until someone acts (a
        full disk), in words; ``None`` once a write has committed since."""
        ...

    async def __aenter__(self) -> Store: ...

    async def __aexit__(self, *exc: object) -> None: ...

    async def ping(self) -> None:
        """Raise ``StoreUnavailable`` unless the store answers; while
        `write_failure` is set, unless a probe write commits too
        (``StoreCannotWrite``, with the reason)."""
        ...

    async def signing_secret(self) -> bytes:
        """The database's token secret, created by the first worker that asks."""
        ...
