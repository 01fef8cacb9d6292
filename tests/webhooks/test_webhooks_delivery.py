"""A pause's webhook, end to end: signed, once, and only for what committed.

The app runs in this process with its lifespan (so its dispatcher runs); the
receiver is a real HTTP server on 127.0.0.1 (:mod:`webhook_support`). Every body
is verified with the ``standardwebhooks`` library and validated against the
committed JSON Schema.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import anyio
import asyncpg
import pytest

from http_support import paused_turn, payment_agent, serve
from symfonic import Webhook, WebhookSettings
from symfonic.core.contracts.webhooks import DeliveryQuery
from webhook_support import SECRET, receiving

pytestmark = pytest.mark.anyio

FAST = WebhookSettings(timeout=2, retry_schedule=(0.5, 1.0, 1.5), poll_interval=0.25)


async def test_a_pause_is_sent_once_as_pause_created_signed_within_a_second(
    store_url: str,
) -> None:
    agent = payment_agent(store_url)
    with receiving() as receiver:
        hook = Webhook(receiver.url, SECRET)
        async with serve(agent, webhooks=[hook], webhook_settings=FAST) as client:
            started = time.monotonic()
            _, paused = await paused_turn(client)
            await receiver.wait_for(1, within=1.0)
            arrived = receiver.received[0].at - started
            await anyio.sleep(1.0)  # nothing else may follow
    (request,) = receiver.received
    payload = request.payload  # verified and validated
    assert payload["type"] == "pause.created"
    data = payload["data"]
    assert data["pause_id"] == paused["pause_id"]
    assert data["kind"] == "approval" and data["tool_call_id"] == paused["tool_call_id"]
    assert data["token"] is None  # no token without the opt-in
    assert request.id == f"msg_pause_{_first_change_id(request.id)}"
    assert request.headers["webhook-signature"].startswith("v1,")
    assert request.status == 200 and arrived < 1.0


def _first_change_id(message_id: str) -> str:
    return message_id.removeprefix("msg_pause_")


async def _fail_pause_writes_after_their_delivery(store_url: str) -> None:
    """A trigger that aborts a pause's insert after its delivery row was written."""
    if store_url.startswith("sqlite"):
        with sqlite3.connect(store_url.removeprefix("sqlite:///")) as db:
            db.execute(
                "CREATE TRIGGER injected_failure AFTER INSERT ON symfonic_webhook_deliveries"
                " WHEN NEW.type = 'pause.created'"
                " BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
            )
        return
    db = await asyncpg.connect(store_url)
    try:
        await db.execute(
            "CREATE FUNCTION injected_failure() RETURNS trigger LANGUAGE plpgsql AS"
            " $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$"
        )
        await db.execute(
            "CREATE TRIGGER injected_failure AFTER INSERT ON symfonic_webhook_deliveries"
            " FOR EACH ROW WHEN (NEW.type = 'pause.created')"
            " EXECUTE FUNCTION injected_failure()"
        )
    finally:
        await db.close()


async def test_a_pause_write_that_rolls_back_sends_no_pause_event(store_url: str) -> None:
    agent = payment_agent(store_url)
    with receiving() as receiver:
        hook = Webhook(receiver.url, SECRET)
        async with serve(agent, webhooks=[hook], webhook_settings=FAST) as client:
            await _fail_pause_writes_after_their_delivery(store_url)
            session = (await client.post("/v1/sessions", json={})).json()["session_id"]
            turn = await client.post(
                f"/v1/sessions/{session}/turns", json={"message": "pay 5"},
                headers={"Accept": "application/json"},
            )
            body: dict[str, Any] = turn.json()
            assert body["status"] == "failed", body
            # The failed turn is told (its own transaction); the pause never existed.
            await receiver.wait_for(1, within=1.0)
            await anyio.sleep(1.0)
            owed = await agent.store.list_deliveries(DeliveryQuery(limit=10))
            assert await agent.store.session_pauses(session) == []
    assert [request.type for request in receiver.received] == ["turn.failed"]
    assert [delivery.type.value for delivery in owed] == ["turn.failed"]
    assert receiver.received[0].payload["data"]["session_id"] == session
