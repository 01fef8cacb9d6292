"""The storage port: what the runtime needs from a database, and nothing more.

The port is the sum of small roles, each a Protocol in a module of its own;
a caller that needs one role is annotated with that role, and a new kind of
record (an audit chain, a run queue) adds a role rather than members here:

===========================  ==================================================
:class:`SessionStore`        sessions and their history (:mod:`.sessions`)
:class:`RunStore`            a first turn's hold on its session (:mod:`.sessions`)
:class:`RunRenewal`          a live first turn's hold, renewed (:mod:`.sessions`)
:class:`PauseStore`          a pause's transitions and reads (:mod:`.pauses`)
:class:`PauseListing`        the pauses a principal may answer (:mod:`.pause_listing`)
:class:`PauseChangeLog`      the record of pause changes (:mod:`.pause_changes`)
:class:`PauseAddressing`     escalating and reassigning a pause (:mod:`.readdressing`)
:class:`RunEventLog`         runs and their kept events (:mod:`.run_events`)
:class:`RunQueue`            messages waiting for their session (:mod:`.run_queue`)
:class:`TurnInterrupts`      taking a busy session over (:mod:`.interrupts`)
:class:`SessionRuns`         the run a session is running now (:mod:`.run_events`)
:class:`WebhookOutbox`       deliveries owed, leased and settled (:mod:`.outbox`)
:class:`RetentionStore`      deleting finished sessions (:mod:`.retention`)
:class:`AuditLog`            the hash-chained audit trail (:mod:`.audit`)
:class:`ApprovalVotes`       approvals of a pause that needs several (:mod:`.approvals`)
===========================  ==================================================

Every method that changes state is one transaction in the adapter, and every
single-use transition (claim, publish, abandon) is one conditional statement
whose row count says who won -- never a read followed by a write. The adapters
(SQLite, PostgreSQL) differ only in how they connect and lock, so one test
suite runs against both.
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
        :attr:`write_failure` is set, unless a probe write commits too
        (``StoreCannotWrite``, with the reason)."""
        ...

    async def signing_secret(self) -> bytes:
        """The database's token secret, created by the first worker that asks."""
        ...
