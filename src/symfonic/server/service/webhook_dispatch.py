"""Sending the webhook outbox: one dispatcher per worker, never on a turn's path, leasing due
deliveries per destination within `per_destination` and `concurrency`. Delivery is at least
once; receivers dedupe on `webhook-id`.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import aiohttp
import anyio
import anyio.abc

from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.outbox import LeasedDelivery, WebhookOutbox
from symfonic.core.contracts.webhooks import (
    CircuitState,
    DeliveryLease,
    DeliverySettlement,
    DeliveryState,
    Destination,
    WebhookEventType,
)
from symfonic.server.service import webhook_circuit as circuits
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.webhook_attempt import GONE, attempt
from symfonic.server.service.webhooks import Webhook, WebhookSettings

logger = logging.getLogger("symfonic.webhooks")

# Failed deliveries deleted per statement, and how often the dispatcher looks for them.
PRUNE_BATCH = 500
PRUNE_EVERY = timedelta(minutes=1)
PRUNE_ROUNDS = 20
# Tries of one circuit's compare-and-swap before leaving it to the next outcomes.
SWAP_TRIES = 3


@dataclass(frozen=True)
class _Ended:
    """An attempt that ended, waiting to be settled."""

    leased: LeasedDelivery
    lease_id: str
    status: int | None
    error: str | None


class WebhookDispatcher:
    """The subscriptions of one worker, and the task that sends what they are owed."""

    def __init__(
        self,
        host: ServiceHost,
        webhooks: Sequence[Webhook],
        settings: WebhookSettings | None = None,
    ) -> None:
        self._host = host
        self.settings = settings or WebhookSettings()
        self.webhooks: dict[str, Webhook] = {}
        for webhook in webhooks:
            if webhook.url in self.webhooks:
                raise ConfigurationError(f"the webhook {webhook.url} is configured twice")
            self.webhooks[webhook.url] = webhook
        self._urls = sorted(self.webhooks)
        self._in_flight: Counter[str] = Counter()
        self._ended: list[_Ended] = []
        self._wake = anyio.Event()
        self._ended_event = anyio.Event()
        self._circuits: dict[str, Destination] = {}
        self._pruned_at: datetime | None = None
        # Deliveries being sent, by id: the ones a stop cuts short are let go at once.
        self._sending: dict[int, tuple[LeasedDelivery, str]] = {}
        self.released = 0

    @property
    def _outbox(self) -> WebhookOutbox:
        """The one role of the host's store the dispatcher uses."""
        return self._host.store

    @property
    def wants_expiring(self) -> bool:
        """Whether a subscription here asks for ``pause.expiring`` (the sweeper then owes it)."""
        expiring = WebhookEventType.PAUSE_EXPIRING
        return any(expiring in hook.event_types for hook in self.webhooks.values())

    def _clock(self) -> datetime:
        return self._host.agent(None).clock()

    async def register(self) -> None:
        """Write this worker's subscriptions: each URL's event types, from now on."""
        for webhook in self.webhooks.values():
            await self._outbox.register_webhook(webhook.url, sorted(webhook.event_types))

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Register, then send what is due until cancelled; then let go of the
        deliveries still being sent, for any worker to send again at once."""
        await self.register()
        settings = self.settings
        try:
            await self._send_until_cancelled(task_status)
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(settings.timeout):
                await self._let_go()

    async def _send_until_cancelled(self, task_status: anyio.abc.TaskStatus[None]) -> None:
        settings = self.settings
        size = settings.concurrency
        async with (
            aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=size),
                timeout=aiohttp.ClientTimeout(total=settings.timeout),
                # A receiver's cookies are never sent back to it, nor to another.
                cookie_jar=aiohttp.DummyCookieJar(),
            ) as client,
            anyio.create_task_group() as senders,
        ):
            senders.start_soon(self._settle_until_cancelled)
            task_status.started()
            failing = False
            while True:
                # Replaced before the look, so a sender that finishes during it wakes the wait.
                self._wake = anyio.Event()
                try:
                    await self._prune_failed()
                    await self._lease_and_send(client, senders)
                except Exception as error:
                    # Once per outage, not once per poll.
                    if not failing:
                        logger.warning("the webhook outbox cannot be read; retrying: %s", error)
                    failing = True
                else:
                    if failing:
                        logger.info("the webhook outbox can be read again")
                    failing = False
                with anyio.move_on_after(settings.poll_interval):
                    await self._wake.wait()

    # leasing, one destination at a time

    async def _lease_and_send(
        self, client: aiohttp.ClientSession, senders: anyio.abc.TaskGroup
    ) -> None:
        """Lease and send until every due destination is drained or has no free sender."""
        store, settings = self._outbox, self.settings
        while self._host.draining is None and sum(self._in_flight.values()) < settings.concurrency:
            now = self._clock()
            room = [url for url in self._urls if self._in_flight[url] < settings.per_destination]
            due = await store.due_destinations(room, now)
            if not due:
                return
            more = False
            for circuit in due:
                url = self._note(circuit)
                limit = await self._room(url, now)
                if limit:
                    leased = await self._lease(url, limit, now, client, senders)
                    more = more or leased == limit
            if not more:
                return

    def _note(self, circuit: Destination) -> str:
        """Keep the circuit as last read; its URL."""
        self._circuits[circuit.url] = circuit
        return circuit.url

    async def _room(self, url: str, now: datetime) -> int:
        """How many of ``url``'s deliveries to lease now: its free senders, or one probe."""
        settings = self.settings
        free = min(
            settings.per_destination - self._in_flight[url],
            settings.concurrency - sum(self._in_flight.values()),
            settings.batch,
        )
        if self._in_flight[url] and free < (settings.per_destination + 1) // 2:
            return 0  # refill half the senders at once: a lease per delivery costs a write each
        circuit = self._circuits.get(url)
        if free <= 0 or circuit is None or circuit.state is CircuitState.CLOSED:
            return max(free, 0)
        probing = circuits.probe(circuit, now, settings.lease_seconds)
        if probing is None or not await self._outbox.swap_destination(circuit, probing):
            return 0
        self._circuits[url] = probing
        logger.warning("webhook destination %s: %s", url, circuits.describe(probing))
        return 1

    async def _lease(
        self,
        url: str,
        limit: int,
        now: datetime,
        client: aiohttp.ClientSession,
        senders: anyio.abc.TaskGroup,
    ) -> int:
        lease_id = uuid.uuid4().hex
        until = now + timedelta(seconds=self.settings.lease_seconds)
        leased = await self._outbox.lease_deliveries(
            DeliveryLease([url], lease_id, now, until, limit)
        )
        for delivery in leased:
            self._in_flight[url] += 1
            senders.start_soon(self._send_one, client, delivery, lease_id)
        return len(leased)

    # sending, then settling in batches

    async def _send_one(
        self, client: aiohttp.ClientSession, leased: LeasedDelivery, lease_id: str
    ) -> None:
        url = leased.delivery.url
        self._sending[leased.delivery.id] = (leased, lease_id)
        try:
            status, error = await attempt(
                client,
                self.webhooks[url],
                leased,
                sent_at=self._clock(),
                settings=self.settings,
                mint=self._host.agent(None).settlement.signer.mint,
            )
        except Exception as failure:
            # Not the receiver's doing: the lease lapses and the delivery is sent again.
            logger.warning("a webhook delivery to %s could not be sent: %s", url, failure)
            self._sending.pop(leased.delivery.id, None)
            self._release([url])
            return
        self._sending.pop(leased.delivery.id, None)
        self._ended.append(_Ended(leased, lease_id, status, error))
        self._ended_event.set()

    async def _let_go(self) -> None:
        """Give up the leases of the deliveries whose sending was cut short: each is due
        again now, for any worker, instead of once its lease lapses."""
        cut, self._sending = list(self._sending.values()), {}
        now = self._clock()
        undone = [
            DeliverySettlement(
                leased.delivery.id,
                lease_id,
                DeliveryState.PENDING,
                now,
                now,
                error="the worker sending it stopped before the receiver answered",
            )
            for leased, lease_id in cut
        ]
        try:
            self.released = sum(await self._outbox.settle_deliveries(undone))
        except Exception as error:
            logger.warning("%d webhook leases lapse instead: %s", len(undone), error)

    def _release(self, urls: Sequence[str]) -> None:
        for url in urls:
            self._in_flight[url] -= 1
        self._wake.set()

    async def _settle_until_cancelled(self) -> None:
        try:
            while True:
                await self._ended_event.wait()
                self._ended_event = anyio.Event()
                await self._settle_ended()
        finally:
            # Attempts that ended are recorded even as the worker stops, if the store answers.
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.settings.timeout):
                await self._settle_ended()

    async def _settle_ended(self) -> None:
        """Settle every attempt that ended since the last call, in one transaction."""
        ended, self._ended = self._ended, []
        if not ended:
            return
        now = self._clock()
        settlements = [self._settlement(one, now) for one in ended]
        try:
            settled = await self._outbox.settle_deliveries(settlements)
        except Exception as failure:
            logger.warning(
                "%d webhook attempts could not be recorded; they are sent again once their "
                "lease lapses: %s",
                len(ended),
                failure,
            )
            return
        finally:
            self._release([one.leased.delivery.url for one in ended])
        for one, settlement, ok in zip(ended, settlements, settled, strict=True):
            self._report(one, settlement, ok)
        await self._judge(ended, now)

    def _settlement(self, ended: _Ended, now: datetime) -> DeliverySettlement:
        delivery, error = ended.leased.delivery, ended.error
        state, next_at = DeliveryState.PENDING, now
        if error is None:
            state = DeliveryState.DELIVERED
        elif delivery.attempts >= self.settings.attempts or error == GONE:
            state = DeliveryState.FAILED
        else:
            next_at = now + timedelta(seconds=jittered(self.settings, delivery.attempts))
        return DeliverySettlement(
            delivery.id, ended.lease_id, state, now, next_at, ended.status, error
        )

    @staticmethod
    def _report(ended: _Ended, settlement: DeliverySettlement, settled: bool) -> None:
        delivery = ended.leased.delivery
        if not settled:
            logger.info("webhook delivery %d was taken over before it was settled", delivery.id)
        elif settlement.state is DeliveryState.FAILED:
            logger.warning(
                "webhook delivery %d (%s to %s) failed after %d attempts: %s",
                delivery.id,
                delivery.type.value,
                delivery.url,
                delivery.attempts,
                settlement.error,
            )

    # each destination's circuit

    async def _judge(self, ended: Sequence[_Ended], now: datetime) -> None:
        """Move each destination's circuit by what its attempts said."""
        errors: dict[str, list[str | None]] = defaultdict(list)
        for one in ended:
            if one.error != GONE:
                errors[one.leased.delivery.url].append(one.error)
        for url, said in errors.items():
            outcomes = circuits.Outcomes.of(said)
            known = self._circuits.get(url)
            if (
                known is not None
                and known.state is CircuitState.CLOSED
                and known.failures == 0
                and outcomes.failures == 0
            ):
                continue  # delivering, and it still is: nothing to write
            try:
                await self._move_circuit(url, outcomes, now)
            except Exception as failure:
                logger.warning(
                    "the circuit of webhook destination %s was not updated: %s", url, failure
                )

    async def _move_circuit(self, url: str, outcomes: circuits.Outcomes, now: datetime) -> None:
        store = self._outbox
        for _ in range(SWAP_TRIES):
            found = await store.webhook_destinations([url])
            if not found:
                return
            circuit = found[0]
            moved = circuits.after(circuit, outcomes, now, self.settings)
            if moved == circuit:
                return
            if await store.swap_destination(circuit, moved):
                self._circuits[url] = moved
                if moved.state is not circuit.state or moved.opens != circuit.opens:
                    log = logger.info if moved.state is CircuitState.CLOSED else logger.warning
                    log("webhook destination %s: %s", url, circuits.describe(moved))
                return

    # retention of failed deliveries

    async def _prune_failed(self) -> None:
        """Delete deliveries failed longer ago than ``failed_ttl``, once a minute at most."""
        now = self._clock()
        if self._pruned_at is not None and now - self._pruned_at < PRUNE_EVERY:
            return
        self._pruned_at = now
        before = now - timedelta(seconds=self.settings.failed_ttl)
        store = self._outbox
        for _ in range(PRUNE_ROUNDS):
            if await store.prune_failed_deliveries(before, PRUNE_BATCH) < PRUNE_BATCH:
                return


def jittered(
    settings: WebhookSettings,
    attempt: int,
    uniform: Callable[[float, float], float] = random.uniform,
) -> float:
    """The delay after failed attempt ``attempt``: the schedule's, ± the jitter."""
    delay = settings.delay_after(attempt)
    return delay * uniform(1 - settings.jitter, 1 + settings.jitter)
