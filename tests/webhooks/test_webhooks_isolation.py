"""One destination that hangs or fails holds back only its own deliveries.

Four receivers subscribe to every pause: one never answers, one answers 500,
one answers 301 (a redirect, never followed) and one answers 200. A burst of
pauses is made; the healthy receiver has every event within moments of the
burst's end, the two failing ones are tried promptly too, and the hanging one's
deliveries wait for it alone, still pending.
"""

from __future__ import annotations

import time

import pytest

from http_support import paused_turn, payment_agent, serve
from symfonic import Webhook, WebhookSettings
from symfonic.core.contracts.webhooks import DeliveryQuery, DeliveryState
from webhook_support import SECRET, receiving

pytestmark = pytest.mark.anyio

BURST = 30
# Only what a test needs to be quick; concurrency is the default.
SETTINGS = WebhookSettings(timeout=2, retry_schedule=(0.5, 1.0, 2.0), poll_interval=0.1)


async def test_a_hanging_or_failing_destination_holds_back_only_its_own_deliveries(
    store_url: str,
) -> None:
    agent = payment_agent(store_url)
    with (
        receiving() as hanging,
        receiving() as erroring,
        receiving() as moved,
        receiving() as healthy,
    ):
        hanging.hold = 60.0
        erroring.status = 500
        moved.status = 301
        receivers = (hanging, erroring, moved, healthy)
        hooks = [Webhook(r.url, SECRET, events={"pause.created"}) for r in receivers]
        async with serve(agent, webhooks=hooks, webhook_settings=SETTINGS) as client:
            started = time.monotonic()
            pause_ids = [(await paused_turn(client))[1]["pause_id"] for _ in range(BURST)]
            ended = time.monotonic()
            await healthy.wait_for(BURST, within=3.0)
            arrived = time.monotonic() - ended
            for failing in (erroring, moved):
                await failing.wait_for(1, within=0.5)
            owed = await agent.store.list_deliveries(DeliveryQuery(url=hanging.url, limit=100))
    got = [request.payload["data"]["pause_id"] for request in healthy.received]
    assert sorted(got) == sorted(pause_ids), "the healthy receiver missed or repeated events"
    assert arrived < 3.0
    # Each failing receiver was first tried within moments of its first pause.
    for failing in (erroring, moved):
        assert failing.received[0].at - started < ended - started + 2.0
    # The hanging receiver was tried, and its deliveries wait for it: none given up.
    assert hanging.received
    assert len(owed) == BURST and all(d.state is DeliveryState.PENDING for d in owed)
