"""The store port's plain operations, passed through one hook; traced, a span each.

These are the operations that change no pause: reads, the run marker, the
record of changes, runs and their kept events, queued messages, the webhook
outbox, retention, the audit trail. Each is written out once, role by role, in
:class:`StoreRoles`, so a wrapper is the port's exact shape. :class:`TracedRoles` puts each in a
``symfonic.store.<operation>`` span; the logging wrapper
(:mod:`symfonic.core.telemetry.logged_store`) passes them through as they are.
The operations that change a pause are each wrapper's own.

Transactions outside any trace (the sweeper's, a background count) get no
span: they would each start a trace of their own every few seconds. A store out
of reach is counted, per operation, before its error is raised.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import Any, Self, TypeVar

from opentelemetry import trace
from opentelemetry.trace import Span

from symfonic.core.contracts.audit import AuditAnchor, AuditEntry, AuditRecord
from symfonic.core.contracts.errors import StoreUnavailable
from symfonic.core.contracts.interrupts import Interrupted
from symfonic.core.contracts.outbox import LeasedDelivery
from symfonic.core.contracts.pause_changes import PauseChange
from symfonic.core.contracts.pause_listing import PauseQuery, PendingCount
from symfonic.core.contracts.pauses import CheckpointRecord, PauseRecord
from symfonic.core.contracts.retention import PruneBatch, PruneReport
from symfonic.core.contracts.run_events import NewRun, RunEvent, RunRecord, RunState
from symfonic.core.contracts.run_queue import QueuedTurn, QueueHead, TakenTurn
from symfonic.core.contracts.sessions import RunRequest, RunStart, SessionRecord
from symfonic.core.contracts.store import Store
from symfonic.core.contracts.types import Event
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
from symfonic.core.telemetry import instruments, names

T = TypeVar("T")


class StoreRoles:
    """Every plain operation of :class:`~symfonic.core.contracts.store.Store`, through
    :meth:`_through` to the store wrapped."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.url = store.url

    @property
    def inner(self) -> Store:
        """The store this one wraps."""
        return self._store

    async def _through(self, operation: str, call: Awaitable[T]) -> T:
        """``call``, the wrapped store's ``operation``; as it is, unless a subclass says."""
        return await call

    @property
    def write_failure(self) -> str | None:
        return self._store.write_failure

    async def __aenter__(self) -> Self:
        await self._store.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._store.__aexit__(*exc)

    async def ping(self) -> None:
        await self._through("ping", self._store.ping())

    async def signing_secret(self) -> bytes:
        return await self._through("signing_secret", self._store.signing_secret())

    # sessions and history
    async def create_session(self, session: SessionRecord) -> None:
        await self._through("create_session", self._store.create_session(session))

    async def get_session(self, session_id: str) -> SessionRecord | None:
        return await self._through("get_session", self._store.get_session(session_id))

    async def history(self, session_id: str, up_to_revision: int) -> list[MessageBody]:
        return await self._through("history", self._store.history(session_id, up_to_revision))

    # runs
    async def begin_run(self, request: RunRequest) -> RunStart | None:
        return await self._through("begin_run", self._store.begin_run(request))

    async def end_run(
        self, session_id: str, run_id: str, failure: FailedTurn | None = None
    ) -> None:
        await self._through("end_run", self._store.end_run(session_id, run_id, failure))

    async def renew_run(self, session_id: str, run_id: str, lease_until: datetime) -> bool:
        renewing = self._store.renew_run(session_id, run_id, lease_until)
        return await self._through("renew_run", renewing)

    # reading pauses
    async def get_pause(self, pause_id: str) -> PauseRecord | None:
        return await self._through("get_pause", self._store.get_pause(pause_id))

    async def load_checkpoint(self, pause_id: str) -> CheckpointRecord | None:
        return await self._through("load_checkpoint", self._store.load_checkpoint(pause_id))

    async def claimed_pause(self, session_id: str, claim_id: str) -> PauseRecord | None:
        return await self._through("claimed_pause", self._store.claimed_pause(session_id, claim_id))

    async def renew_claim(self, session_id: str, claim_id: str, lease_until: datetime) -> bool:
        renewing = self._store.renew_claim(session_id, claim_id, lease_until)
        return await self._through("renew_claim", renewing)

    async def open_pause(self, session_id: str) -> PauseRecord | None:
        return await self._through("open_pause", self._store.open_pause(session_id))

    async def session_pauses(self, session_id: str) -> list[PauseRecord]:
        return await self._through("session_pauses", self._store.session_pauses(session_id))

    async def list_pauses(self, query: PauseQuery) -> list[PauseRecord]:
        return await self._through("list_pauses", self._store.list_pauses(query))

    async def count_pauses(self, query: PauseQuery) -> int:
        return await self._through("count_pauses", self._store.count_pauses(query))

    async def count_pending(self) -> list[PendingCount]:
        return await self._through("count_pending", self._store.count_pending())

    # the record of pause changes
    async def pause_change_position(self) -> int:
        return await self._through("pause_change_position", self._store.pause_change_position())

    async def pause_changes_since(self, position: int, *, limit: int) -> list[PauseChange] | None:
        replay = self._store.pause_changes_since(position, limit=limit)
        return await self._through("pause_changes_since", replay)

    def watch_pause_changes(self) -> AsyncGenerator[list[PauseChange], None]:
        # Untraced: a watch lasts as long as the feed has subscribers, and a span
        # open that long would say nothing about any one transaction.
        return self._store.watch_pause_changes()

    # runs and their kept events
    async def begin_run_log(self, run: NewRun) -> None:
        await self._through("begin_run_log", self._store.begin_run_log(run))

    async def renew_run_log(self, run_id: str, lease_until: datetime) -> bool:
        return await self._through("renew_run_log", self._store.renew_run_log(run_id, lease_until))

    async def append_run_events(self, run_id: str, events: Sequence[Event]) -> int:
        return await self._through(
            "append_run_events", self._store.append_run_events(run_id, events)
        )

    async def end_run_log(
        self,
        run_id: str,
        state: RunState,
        outcome: dict[str, Any] | None,
        at: datetime,
        last: Sequence[Event] = (),
    ) -> bool:
        return await self._through(
            "end_run_log", self._store.end_run_log(run_id, state, outcome, at, last)
        )

    async def cancel_run(self, run_id: str, at: datetime) -> bool:
        return await self._through("cancel_run", self._store.cancel_run(run_id, at))

    async def run_record(self, run_id: str) -> RunRecord | None:
        return await self._through("run_record", self._store.run_record(run_id))

    async def running_run(self, session_id: str, now: datetime) -> RunRecord | None:
        return await self._through("running_run", self._store.running_run(session_id, now))

    async def run_events_after(self, run_id: str, position: int, *, limit: int) -> list[RunEvent]:
        reading = self._store.run_events_after(run_id, position, limit=limit)
        return await self._through("run_events_after", reading)

    def watch_run_events(self) -> AsyncGenerator[list[str], None]:
        # Untraced, as the watch of pause changes is.
        return self._store.watch_run_events()

    async def prune_run_events(self, ended_before: datetime, batch: int) -> int:
        return await self._through(
            "prune_run_events", self._store.prune_run_events(ended_before, batch)
        )

    async def interrupt_turn(self, request: RunRequest, *, forget: bool) -> Interrupted | None:
        taking = self._store.interrupt_turn(request, forget=forget)
        return await self._through("interrupt_turn", taking)

    # queued messages
    async def enqueue_turn(self, turn: QueuedTurn) -> None:
        await self._through("enqueue_turn", self._store.enqueue_turn(turn))

    async def take_queued_turn(
        self, session_id: str, now: datetime, lease_until: datetime
    ) -> TakenTurn | None:
        taking = self._store.take_queued_turn(session_id, now, lease_until)
        return await self._through("take_queued_turn", taking)

    async def cancel_queued_turn(self, run_id: str, at: datetime) -> bool:
        return await self._through("cancel_queued_turn", self._store.cancel_queued_turn(run_id, at))

    async def free_queue_heads(self, now: datetime, limit: int) -> list[QueueHead]:
        finding = self._store.free_queue_heads(now, limit)
        return await self._through("free_queue_heads", finding)

    # the webhook outbox
    async def register_webhook(self, url: str, events: Sequence[WebhookEventType]) -> None:
        await self._through("register_webhook", self._store.register_webhook(url, events))

    async def announce_expiring(self, now: datetime, lead_seconds: float) -> int:
        announcing = self._store.announce_expiring(now, lead_seconds)
        return await self._through("announce_expiring", announcing)

    async def due_destinations(self, urls: Sequence[str], now: datetime) -> list[Destination]:
        return await self._through("due_destinations", self._store.due_destinations(urls, now))

    async def lease_deliveries(self, lease: DeliveryLease) -> list[LeasedDelivery]:
        return await self._through("lease_deliveries", self._store.lease_deliveries(lease))

    async def settle_delivery(self, settlement: DeliverySettlement) -> bool:
        return await self._through("settle_delivery", self._store.settle_delivery(settlement))

    async def settle_deliveries(self, settlements: Sequence[DeliverySettlement]) -> list[bool]:
        return await self._through("settle_deliveries", self._store.settle_deliveries(settlements))

    async def prune_failed_deliveries(self, before: datetime, limit: int) -> int:
        pruning = self._store.prune_failed_deliveries(before, limit)
        return await self._through("prune_failed_deliveries", pruning)

    async def webhook_destinations(self, urls: Sequence[str] | None = None) -> list[Destination]:
        return await self._through("webhook_destinations", self._store.webhook_destinations(urls))

    async def swap_destination(self, expected: Destination, new: Destination) -> bool:
        return await self._through("swap_destination", self._store.swap_destination(expected, new))

    async def list_deliveries(self, query: DeliveryQuery) -> list[WebhookDelivery]:
        return await self._through("list_deliveries", self._store.list_deliveries(query))

    async def resend_delivery(self, delivery_id: int, now: datetime) -> WebhookDelivery | None:
        return await self._through("resend_delivery", self._store.resend_delivery(delivery_id, now))

    # retention
    async def prune(self, batch: PruneBatch) -> PruneReport:
        return await self._through("prune", self._store.prune(batch))

    # the audit trail
    async def append_audit(self, entry: AuditEntry) -> None:
        await self._through("append_audit", self._store.append_audit(entry))

    async def seal_audit(self) -> int:
        return await self._through("seal_audit", self._store.seal_audit())

    async def audit_records(
        self, *, after: int = 0, limit: int = 100, since: str | None = None
    ) -> list[AuditRecord]:
        records = self._store.audit_records(after=after, limit=limit, since=since)
        return await self._through("audit_records", records)

    async def audit_anchor(self) -> AuditAnchor:
        return await self._through("audit_anchor", self._store.audit_anchor())

    async def prune_audit(self, before: str) -> int:
        return await self._through("prune_audit", self._store.prune_audit(before))


class TracedRoles(StoreRoles):
    """Every plain operation of the store, in a ``symfonic.store.<operation>`` span."""

    async def _through(self, operation: str, call: Awaitable[T]) -> T:
        return await in_span(names.STORE_PREFIX + operation, operation, call)


def transaction_span(
    name: str, operation: str, attributes: Mapping[str, Any] | None = None
) -> AbstractContextManager[Span]:
    """A span for one transaction, inside a trace only: the sweeper's and the pending
    gauge's background reads would otherwise start a trace of their own every few seconds."""
    if not trace.get_current_span().get_span_context().is_valid:
        return nullcontext(trace.INVALID_SPAN)
    attributes = {names.STORE_OPERATION: operation, **(attributes or {})}
    # A traced store exists only in an agent that found an SDK recording.
    return instruments.span(name, attributes, recording=True)


async def counting(call: Awaitable[T], operation: str) -> T:
    """``call``'s result; a store out of reach is counted before it is raised."""
    try:
        return await call
    except StoreUnavailable:
        instruments.STORE_UNAVAILABLE.add(1, {names.STORE_OPERATION: operation})
        raise


async def in_span(
    name: str, operation: str, call: Awaitable[T], attributes: Mapping[str, Any] | None = None
) -> T:
    with transaction_span(name, operation, attributes):
        return await counting(call, operation)
