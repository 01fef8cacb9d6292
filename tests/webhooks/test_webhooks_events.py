"""What each event says: failed turns, the token's opt-in, and the operator's view.

Everything a test here receives is verified with the ``standardwebhooks``
library and validated against the committed JSON Schema.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from langchain_core.messages import AIMessage

from http_support import APPROVE, JSON, auth, frames, paused_turn, payment_agent, scripted, serve
from symfonic import SymfonicAgent, Webhook, WebhookSettings
from webhook_support import SECRET, receiving

pytestmark = pytest.mark.anyio

FAST = WebhookSettings(timeout=2, retry_schedule=(0.2,), poll_interval=0.1)
KEYS = "alice=key-alice,oscar=key-oscar:operator"


def model_down() -> AIMessage:
    raise RuntimeError("the model provider is down")


async def test_a_first_turn_that_fails_sends_turn_failed_with_its_error(store_url: str) -> None:
    agent = SymfonicAgent(model=scripted(model_down), store=store_url)
    with receiving() as receiver:
        hook = Webhook(receiver.url, SECRET)
        async with serve(agent, webhooks=[hook], webhook_settings=FAST) as client:
            session = (await client.post("/v1/sessions", json={})).json()["session_id"]
            turn = await client.post(f"/v1/sessions/{session}/turns", json={"message": "hi"})
            error = frames(turn.text)[-1]
            assert error.event == "error"
            await receiver.wait_for(1, within=1.0)
    (request,) = receiver.received
    payload = request.payload
    assert payload["type"] == "turn.failed"
    assert payload["data"] == {
        "session_id": session,
        "agent": agent.name,
        "pause_id": None,
        "code": error.data["code"],
        "message": error.data["message"],
    }


async def test_a_resume_that_fails_sends_pause_abandoned_and_turn_failed(store_url: str) -> None:
    agent = payment_agent(store_url, after=(model_down,))
    with receiving() as receiver:
        hook = Webhook(receiver.url, SECRET)
        async with serve(agent, webhooks=[hook], webhook_settings=FAST) as client:
            _, paused = await paused_turn(client)
            resumed = await client.post(
                "/v1/resume", json={"token": paused["pause_token"], "answer": APPROVE}
            )
            assert frames(resumed.text)[-1].event == "error"
            await receiver.wait_for(3, within=1.0)
    kinds = sorted(request.type for request in receiver.received)
    assert kinds == ["pause.abandoned", "pause.created", "turn.failed"]
    (failed,) = receiver.of_type("turn.failed")
    assert failed.payload["data"]["pause_id"] == paused["pause_id"]
    assert len({request.id for request in receiver.received}) == 3


async def test_the_token_is_sent_only_to_a_subscription_that_opts_in(store_url: str) -> None:
    agent = payment_agent(store_url)
    with receiving() as plain, receiving() as trusted:
        hooks = [Webhook(plain.url, SECRET), Webhook(trusted.url, SECRET, include_token=True)]
        async with serve(agent, webhooks=hooks, webhook_settings=FAST) as client:
            _, paused = await paused_turn(client)
            await plain.wait_for(1, within=1.0)
            await trusted.wait_for(1, within=1.0)
            resumed = await client.post(
                "/v1/resume", json={"token": paused["pause_token"], "answer": APPROVE},
                headers=JSON,
            )
            assert resumed.json()["status"] == "complete"
            await plain.wait_for(1, within=1.0, event="pause.answered")
            await trusted.wait_for(1, within=1.0, event="pause.answered")
    assert plain.of_type("pause.created")[0].payload["data"]["token"] is None
    assert trusted.of_type("pause.created")[0].payload["data"]["token"] == paused["pause_token"]
    for receiver in (plain, trusted):
        answered = receiver.of_type("pause.answered")[0].payload["data"]
        assert "token" not in answered
        assert answered["answered_by"] == "local" and answered["answered_at"] is not None


async def deliveries_in(
    client: httpx.AsyncClient, state: str, *, count: int, within: float
) -> list[dict[str, Any]]:
    """The deliveries in ``state`` once the list holds ``count``; fails after ``within`` s."""
    with anyio.fail_after(within):
        while True:
            listed = await client.get(
                "/v1/webhooks/deliveries", params={"state": state}, headers=auth("oscar")
            )
            deliveries: list[dict[str, Any]] = listed.json()["deliveries"]
            if len(deliveries) >= count:
                return deliveries
            await anyio.sleep(0.05)


async def test_an_operator_lists_failed_deliveries_and_resends_one(store_url: str) -> None:
    agent = payment_agent(store_url)
    settings = WebhookSettings(timeout=2, retry_schedule=(0.1,), max_attempts=1,
                               poll_interval=0.1, inbox_url="https://inbox.example/")
    with receiving() as receiver:
        receiver.status = 500
        hook = Webhook(receiver.url, SECRET, events={"pause.created"})
        options: dict[str, Any] = {"webhooks": [hook], "webhook_settings": settings}
        async with serve(agent, api_keys=KEYS, **options) as client:
            _, paused = await paused_turn(client, auth("alice"))
            await receiver.wait_for(1, within=1.0)
            refused = await client.get("/v1/webhooks/deliveries", headers=auth("alice"))
            assert refused.status_code == 403
            assert refused.json()["error"]["code"] == "forbidden"
            # The receiver has its request before the dispatcher records the outcome:
            # wait for the listing itself to show it, however slow the machine.
            (failed,) = await deliveries_in(client, "failed", count=1, within=10.0)
            assert failed["attempts"] == 1 and failed["last_error"] == "the receiver answered 500"
            assert failed["pause_id"] == paused["pause_id"]
            receiver.status = 200
            resend = f"/v1/webhooks/deliveries/{failed['id']}/resend"
            assert (await client.post(resend, headers=auth("alice"))).status_code == 403
            missing = await client.post("/v1/webhooks/deliveries/999999/resend",
                                        headers=auth("oscar"))
            assert missing.status_code == 404
            assert missing.json()["error"]["code"] == "delivery_not_found"
            again = await client.post(resend, headers=auth("oscar"))
            assert again.status_code == 200
            assert (again.json()["state"], again.json()["attempts"]) == ("pending", 0)
            (delivered,) = await deliveries_in(client, "delivered", count=1, within=10.0)
    first, second = receiver.received
    assert first.id == second.id == failed["message_id"]
    assert second.payload["data"]["url"] == f"https://inbox.example/inbox#{paused['pause_id']}"
    assert delivered["id"] == failed["id"] and delivered["attempts"] == 1
