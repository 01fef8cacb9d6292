"""The storage port in SQL, for the SQLite and PostgreSQL adapters alike.

Each method is one transition or read, written once in the module that owns it:
sessions and first turns (:mod:`symfonic.storage.runs`), a pause's transitions
(:mod:`symfonic.storage.pause_writes`), reads of pauses
(:mod:`symfonic.storage.pause_reads`), a principal's pauses a page at a time
(:mod:`symfonic.storage.pause_listing`), retention
(:mod:`symfonic.storage.retention`), the webhook outbox
(:mod:`symfonic.storage.webhooks`). Where the databases differ, the two forms
stand side by side there, chosen by the adapter's
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

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

from symfonic.core.contracts.store import (
    CheckpointRecord,
    Claim,
    ClaimedPause,
    LeasedDelivery,
    NewPause,
    PauseQuery,
    PauseRecord,
    PendingCount,
    PruneBatch,
    PruneReport,
    ResumePublish,
    RunRequest,
    RunStart,
    SessionRecord,
    SweepReport,
    TurnPublish,
)
from symfonic.core.contracts.webhooks import (
    DeliveryLease,
    DeliveryQuery,
    DeliverySettlement,
    Destination,
    FailedTurn,
    WebhookDelivery,
    WebhookEventType,
)
from symfonic.core.messages import MessageBody
from symfonic.storage import (
    pause_listing,
    pause_reads,
    pause_writes,
    retention,
    runs,
    webhook_destinations,
    webhooks,
)
from symfonic.storage.owed import Kind
from symfonic.storage.pause_changes import PauseChangeRecord


class SqlStore(PauseChangeRecord):
    """A ``Store`` in SQL; adapters supply how transactions run."""

    # sessions and first turns

    async def create_session(self, session: SessionRecord) -> None:
        await runs.create_session(self, session)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        return await runs.get_session(self, session_id)

    async def history(self, session_id: str, up_to_revision: int) -> list[MessageBody]:
        return await runs.history(self, session_id, up_to_revision)

    async def begin_run(self, request: RunRequest) -> RunStart | None:
        return await runs.begin_run(self, request)

    async def end_run(
        self, session_id: str, run_id: str, failure: FailedTurn | None = None
    ) -> None:
        await runs.end_run(self, session_id, run_id, failure)

    async def publish_turn(self, publish: TurnPublish) -> int:
        return await runs.publish_turn(self, publish)

    # a pause's transitions

    async def record_pause(self, new: NewPause) -> None:
        await pause_writes.record_pause(self, new)

    async def claim_pause(self, claim: Claim) -> ClaimedPause | None:
        return await pause_writes.claim_pause(self, claim)

    async def renew_claim(self, session_id: str, claim_id: str, lease_until: datetime) -> bool:
        return await pause_writes.renew_claim(self, session_id, claim_id, lease_until)

    async def publish_resume(self, publish: ResumePublish) -> int:
        return await pause_writes.publish_resume(self, publish)

    async def abandon_claim(
        self, session_id: str, claim_id: str, failure: FailedTurn | None = None
    ) -> bool:
        return await pause_writes.abandon_claim(self, session_id, claim_id, failure)

    async def abandon_pending(self, session_id: str) -> int:
        return await pause_writes.abandon_pending(self, session_id)

    async def sweep(self, now: datetime) -> SweepReport:
        # Cleanups owed since the store could not write go first: a failed turn's
        # claim or session is released within one sweep of writes working again.
        settled = await self.owed.settle()
        report = await pause_writes.sweep(self, now)
        return replace(report, runs_ended=settled[Kind.END_RUN])

    # reading pauses

    async def get_pause(self, pause_id: str) -> PauseRecord | None:
        return await pause_reads.get_pause(self, pause_id)

    async def load_checkpoint(self, pause_id: str) -> CheckpointRecord | None:
        return await pause_reads.load_checkpoint(self, pause_id)

    async def claimed_pause(self, session_id: str, claim_id: str) -> PauseRecord | None:
        return await pause_reads.claimed_pause(self, session_id, claim_id)

    async def open_pause(self, session_id: str) -> PauseRecord | None:
        return await pause_reads.open_pause(self, session_id)

    async def session_pauses(self, session_id: str) -> list[PauseRecord]:
        return await pause_reads.session_pauses(self, session_id)

    async def list_pauses(self, query: PauseQuery) -> list[PauseRecord]:
        return await pause_listing.list_pauses(self, query)

    async def count_pauses(self, query: PauseQuery) -> int:
        return await pause_listing.count_pauses(self, query)

    async def count_pending(self) -> list[PendingCount]:
        return await pause_listing.count_pending(self)

    # retention

    async def prune(self, batch: PruneBatch) -> PruneReport:
        return await retention.prune(self, batch)

    # the webhook outbox

    async def register_webhook(self, url: str, events: Sequence[WebhookEventType]) -> None:
        await webhooks.register(self, url, events, datetime.now(UTC))

    async def announce_expiring(self, now: datetime, lead_seconds: float) -> int:
        return await webhooks.announce_expiring(self, now, lead_seconds)

    async def due_destinations(self, urls: Sequence[str], now: datetime) -> list[Destination]:
        return await webhook_destinations.due(self, urls, now)

    async def lease_deliveries(self, lease: DeliveryLease) -> list[LeasedDelivery]:
        return await webhooks.lease(self, lease)

    async def settle_delivery(self, settlement: DeliverySettlement) -> bool:
        return await webhooks.settle(self, settlement)

    async def settle_deliveries(self, settlements: Sequence[DeliverySettlement]) -> list[bool]:
        return await webhooks.settle_many(self, settlements)

    async def prune_failed_deliveries(self, before: datetime, limit: int) -> int:
        return await webhooks.prune_failed(self, before, limit)

    async def webhook_destinations(self, urls: Sequence[str] | None = None) -> list[Destination]:
        return await webhook_destinations.read(self, urls)

    async def swap_destination(self, expected: Destination, new: Destination) -> bool:
        return await webhook_destinations.swap(self, expected, new)

    async def list_deliveries(self, query: DeliveryQuery) -> list[WebhookDelivery]:
        return await webhooks.list_deliveries(self, query)

    async def resend_delivery(self, delivery_id: int, now: datetime) -> WebhookDelivery | None:
        return await webhooks.resend(self, delivery_id, now)
