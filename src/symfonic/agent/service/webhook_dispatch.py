"""Sending the webhook outbox: one dispatcher per worker, never on a turn's path.

The dispatcher looks at the outbox every ``poll_interval`` (one indexed read),
and, when a delivery to one of its URLs is due, leases a batch of them with one
statement (:meth:`Store.lease_deliveries`) -- as many as it has free senders --
and sends each from its own task over one ``httpx.AsyncClient``: a request
timeout, no redirects followed (a 3xx is a failure), at most ``concurrency``
requests in flight. A turn or a resume never waits for any of this: they only
wrote a row, in their own transaction.

Each attempt is settled under the lease that sent it: a 2xx delivers it;
anything else schedules the next attempt (``retry_schedule``, ±``jitter``) or,
after the last one, leaves it ``failed`` for an operator to see and resend. A
worker that dies mid-send settles nothing; its lease lapses and another worker
sends the delivery again, with the same ``webhook-id``. Delivery is therefore
at least once, and a receiver dedupes on ``webhook-id``.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

import anyio
import anyio.abc
import httpx

from symfonic.agent.service.host import ServiceHost
from symfonic.agent.service.webhook_payloads import body_of
from symfonic.agent.service.webhooks import TOKEN_EVENTS, Webhook, WebhookSettings
from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.store import LeasedDelivery
from symfonic.core.contracts.types import PauseState
from symfonic.core.contracts.webhooks import (
    DeliveryLease,
    DeliverySettlement,
    DeliveryState,
    WebhookEventType,
)

logger = logging.getLogger("symfonic.webhooks")

# Why a pause event cannot be sent at all: no later attempt could send it either.
GONE = "its pause was deleted before it could be sent"


class WebhookDispatcher:
    """The subscriptions of one worker, and the task that sends what they are owed."""

    def __init__(
        self,
        host: ServiceHost,
        webhooks: Sequence[Webhook],
        settings: WebhookSettings | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._host = host
        self.settings = settings or WebhookSettings()
        self.webhooks: dict[str, Webhook] = {}
        for webhook in webhooks:
            if webhook.url in self.webhooks:
                raise ConfigurationError(f"the webhook {webhook.url} is configured twice")
            self.webhooks[webhook.url] = webhook
        self._transport = transport
        self._urls = sorted(self.webhooks)
        self._in_flight = 0
        self._wake = anyio.Event()

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
            await self._host.store.register_webhook(webhook.url, sorted(webhook.event_types))

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Register, then send what is due until cancelled."""
        await self.register()
        settings = self.settings
        timeout = httpx.Timeout(settings.timeout)
        async with (
            httpx.AsyncClient(
                timeout=timeout, follow_redirects=False, transport=self._transport
            ) as client,
            anyio.create_task_group() as senders,
        ):
            task_status.started()
            failing = False
            while True:
                # Replaced before the look, so a sender that finishes during it wakes the wait.
                self._wake = anyio.Event()
                try:
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

    async def _lease_and_send(
        self, client: httpx.AsyncClient, senders: anyio.abc.TaskGroup
    ) -> None:
        store = self._host.store
        while (free := self.settings.concurrency - self._in_flight) > 0:
            now = self._clock()
            if not await store.deliveries_due(self._urls, now):
                return
            lease_id = uuid.uuid4().hex
            until = now + timedelta(seconds=self.settings.lease_seconds)
            taking = DeliveryLease(self._urls, lease_id, now, until, min(free, self.settings.batch))
            leased = await store.lease_deliveries(taking)
            if not leased:
                return
            for delivery in leased:
                self._in_flight += 1
                senders.start_soon(self._send_one, client, delivery, lease_id)

    async def _send_one(
        self, client: httpx.AsyncClient, leased: LeasedDelivery, lease_id: str
    ) -> None:
        try:
            status, error = await self._attempt(client, leased)
            with anyio.CancelScope(shield=True):
                await self._settle(leased, lease_id, status, error)
        except Exception as failure:
            logger.warning("a webhook delivery could not be settled: %s", failure)
        finally:
            self._in_flight -= 1
            self._wake.set()

    async def _attempt(
        self, client: httpx.AsyncClient, leased: LeasedDelivery
    ) -> tuple[int | None, str | None]:
        """One request; the status it got and, unless it delivered, why not in words."""
        delivery, pause = leased.delivery, leased.pause
        webhook = self.webhooks[delivery.url]
        token = None
        if (
            webhook.include_token
            and delivery.type in TOKEN_EVENTS
            and pause is not None
            and pause.state is PauseState.PENDING
        ):
            token = self._host.agent(None).guarded.signer.mint(pause.pause_id)
        body = body_of(delivery, pause, inbox_url=self.settings.inbox_url, token=token)
        if body is None:
            return None, GONE
        sent_at = self._clock()
        headers = {
            "content-type": "application/json",
            "webhook-id": delivery.message_id,
            "webhook-timestamp": str(int(sent_at.timestamp())),
            "webhook-signature": webhook.signer.sign(delivery.message_id, sent_at, body),
        }
        try:
            response = await client.post(delivery.url, content=body, headers=headers)
        except httpx.TimeoutException:
            return None, f"no answer within {self.settings.timeout:g} s"
        except httpx.ConnectError:
            return None, "could not connect to the receiver"
        except httpx.TransportError as error:
            return None, f"the connection failed ({type(error).__name__})"
        status = response.status_code
        if 200 <= status < 300:
            return status, None
        if 300 <= status < 400:
            return status, f"the receiver answered {status}; redirects are not followed"
        return status, f"the receiver answered {status}"

    async def _settle(
        self, leased: LeasedDelivery, lease_id: str, status: int | None, error: str | None
    ) -> None:
        delivery, now = leased.delivery, self._clock()
        state, next_at = DeliveryState.PENDING, now
        if error is None:
            state = DeliveryState.DELIVERED
        elif delivery.attempts >= self.settings.attempts or error == GONE:
            state = DeliveryState.FAILED
        else:
            next_at = now + timedelta(seconds=jittered(self.settings, delivery.attempts))
        settled = await self._host.store.settle_delivery(
            DeliverySettlement(delivery.id, lease_id, state, now, next_at, status, error)
        )
        if not settled:
            logger.info("webhook delivery %d was taken over before it was settled", delivery.id)
        elif state is DeliveryState.FAILED:
            logger.warning(
                "webhook delivery %d (%s to %s) failed after %d attempts: %s",
                delivery.id,
                delivery.type.value,
                delivery.url,
                delivery.attempts,
                error,
            )


def jittered(
    settings: WebhookSettings,
    attempt: int,
    uniform: Callable[[float, float], float] = random.uniform,
) -> float:
    """The delay after failed attempt ``attempt``: the schedule's, ± the jitter."""
    delay = settings.delay_after(attempt)
    return delay * uniform(1 - settings.jitter, 1 + settings.jitter)
