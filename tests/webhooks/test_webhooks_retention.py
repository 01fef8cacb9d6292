"""A delivery that failed is kept for an operator, then deleted: the outbox stays bounded.

``--webhook-failed-ttl`` (default 7 days) is how long; every worker's dispatcher
deletes the older ones as it looks at the outbox, with or without
``--retention`` (which deletes delivered ones with their sessions).
"""

from __future__ import annotations

import anyio
import pytest

from http_support import paused_turn, payment_agent, serve
from symfonic import SymfonicAgent, Webhook, WebhookSettings
from symfonic.cli.main import parser
from symfonic.cli.serve_webhooks import webhooks_of
from symfonic.core.contracts.webhooks import DeliveryQuery, DeliveryState, WebhookDelivery
from webhook_support import SECRET, receiving


def _failed_ttl(*argv: str) -> float:
    args = parser().parse_args(["serve", "--webhook", "http://127.0.0.1:9/hook", *argv])
    _, settings = webhooks_of(args, SECRET)
    assert settings is not None
    return settings.failed_ttl


def test_the_failed_ttl_is_a_week_unless_the_option_says_otherwise() -> None:
    assert _failed_ttl() == 7 * 24 * 3600
    assert _failed_ttl("--webhook-failed-ttl", "36h") == 36 * 3600


@pytest.mark.anyio
async def test_a_failed_delivery_older_than_the_ttl_is_deleted_and_a_younger_one_kept(
    store_url: str,
) -> None:
    agent = payment_agent(store_url)
    fail_once = WebhookSettings(timeout=1, retry_schedule=(0.1,), max_attempts=1,
                                poll_interval=0.05)
    with receiving() as receiver:
        receiver.status = 500
        hook = Webhook(receiver.url, SECRET, events={"pause.created"})
        async with serve(agent, webhooks=[hook], webhook_settings=fail_once) as client:
            await paused_turn(client)
            await receiver.wait_for(1, within=2.0)
            await _until_failed(agent, 1)
        await anyio.sleep(1.2)
        async with serve(agent, webhooks=[hook], webhook_settings=fail_once) as client:
            await paused_turn(client)  # fails now: younger than any ttl below
            await _until_failed(agent, 2)
        short = WebhookSettings(timeout=1, poll_interval=0.05, failed_ttl=1.0)
        async with serve(agent, webhooks=[hook], webhook_settings=short):
            await _until_failed(agent, 1)
            (kept,) = await _failed(agent)
    assert kept.id == 2


async def _failed(agent: SymfonicAgent) -> list[WebhookDelivery]:
    failed = DeliveryQuery(states=frozenset({DeliveryState.FAILED}))
    return await agent.store.list_deliveries(failed)


async def _until_failed(agent: SymfonicAgent, count: int) -> None:
    """Until exactly ``count`` deliveries are failed, within 2 s."""
    with anyio.fail_after(2.0):
        while True:
            if len(await _failed(agent)) == count:
                return
            await anyio.sleep(0.05)
