"""A receiver that is down: the event is retried on schedule with the same webhook-id.

The receiver answers 500 to the first attempt, is not listening for the second,
and is back for the third. The attempts the receiver sees are spaced as the
schedule says (each delay ± its jitter, plus at most a poll interval), and the
outbox says in words why each attempt did not deliver.
"""

from __future__ import annotations

import anyio
import pytest

from http_support import paused_turn, payment_agent, serve
from symfonic import Webhook, WebhookSettings
from symfonic.core.contracts.store import Store
from symfonic.core.contracts.webhooks import DeliveryQuery, DeliveryState, WebhookDelivery
from webhook_support import SECRET, receiving

pytestmark = pytest.mark.anyio

SCHEDULE = (1.0, 2.0, 1.0)
SETTINGS = WebhookSettings(timeout=1, retry_schedule=SCHEDULE, jitter=0.2, poll_interval=0.25)


async def _only_delivery(store: Store) -> WebhookDelivery:
    (delivery,) = await store.list_deliveries(DeliveryQuery(limit=5))
    return delivery


async def _until_attempts(store: Store, attempts: int, within: float) -> WebhookDelivery:
    with anyio.fail_after(within):
        while True:
            delivery = await _only_delivery(store)
            if delivery.attempts == attempts and delivery.lease_id is None:
                return delivery
            await anyio.sleep(0.02)


async def test_a_receiver_down_then_back_gets_the_event_with_the_same_id_on_schedule(
    store_url: str,
) -> None:
    agent = payment_agent(store_url)
    with receiving() as receiver:
        receiver.status = 500
        hook = Webhook(receiver.url, SECRET, events={"pause.created"})
        async with serve(agent, webhooks=[hook], webhook_settings=SETTINGS) as client:
            await paused_turn(client)
            await receiver.wait_for(1, within=1.0)
            receiver.stop()
            first = await _until_attempts(agent.store, 1, within=1.0)
            assert (first.state, first.last_status) == (DeliveryState.PENDING, 500)
            assert first.last_error == "the receiver answered 500"
            second = await _until_attempts(agent.store, 2, within=SCHEDULE[0] * 1.2 + 1.0)
            assert second.last_status is None
            assert second.last_error == "could not connect to the receiver"
            receiver.status = 200
            receiver.listen()
            await receiver.wait_for(2, within=SCHEDULE[1] * 1.2 + 1.0)
            delivered = await _until_attempts(agent.store, 3, within=1.0)
    assert delivered.state is DeliveryState.DELIVERED and delivered.last_error is None
    failed, arrived = receiver.received
    assert failed.id == arrived.id  # the same webhook-id on every attempt
    assert arrived.payload == failed.payload
    gap = arrived.at - failed.at
    least = (SCHEDULE[0] + SCHEDULE[1]) * (1 - SETTINGS.jitter)
    most = (SCHEDULE[0] + SCHEDULE[1]) * (1 + SETTINGS.jitter) + 2 * SETTINGS.poll_interval + 0.3
    assert least <= gap <= most, gap


async def test_after_the_last_attempt_a_delivery_is_failed_and_kept(store_url: str) -> None:
    agent = payment_agent(store_url)
    settings = WebhookSettings(timeout=1, retry_schedule=(0.2,), poll_interval=0.1)
    with receiving() as receiver:
        receiver.status = 302  # a redirect is not followed: it is a failure
        hook = Webhook(receiver.url, SECRET, events={"pause.created"})
        async with serve(agent, webhooks=[hook], webhook_settings=settings) as client:
            await paused_turn(client)
            await receiver.wait_for(2, within=2.0)
            with anyio.fail_after(1.0):
                while True:
                    delivery = await _only_delivery(agent.store)
                    if delivery.state is DeliveryState.FAILED:
                        break
                    await anyio.sleep(0.02)
            await anyio.sleep(0.5)
    assert len(receiver.received) == 2 and delivery.attempts == 2
    assert delivery.last_error == "the receiver answered 302; redirects are not followed"
