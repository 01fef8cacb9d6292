"""Four eyes over HTTP, through the real app, on SQLite and PostgreSQL.

alice asks and is refused with 403 ``own_request``; carol's approval is counted
with 202 and the pause, listed, says where the vote stands; carol again gets
409 ``already_approved``; dave's approval runs the turn on, once. A request for
a stream whose approval is only counted gets the same 202 JSON, and the typed
client reads it as an ``approval.recorded`` event.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from feed_support import following
from http_support import (
    APPROVE,
    JSON,
    auth,
    paused_turn,
    payment_agent,
    serve,
    uvicorn_serving,
)
from symfonic import needs_approval
from symfonic.agent.fastapi.app import create_app
from symfonic.client import AsyncSymfonicClient
from symfonic.core.contracts.types import ApprovalRecordedEvent

pytestmark = pytest.mark.anyio

KEYS = (
    "alice=key-alice:payments,carol=key-carol:payments,dave=key-dave:payments,"
    "erin=key-erin:payments"
)


async def resume(
    client: httpx.AsyncClient, name: str, token: str, headers: dict[str, str] = JSON
) -> httpx.Response:
    body = {"token": token, "answer": APPROVE}
    return await client.post("/v1/resume", json=body, headers={**auth(name), **headers})


async def listed(client: httpx.AsyncClient, name: str) -> list[dict[str, Any]]:
    response = await client.get("/v1/pauses", headers=auth(name))
    assert response.status_code == 200, response.text
    return list(response.json()["pauses"])


async def test_two_approvals_over_http(store_url: str) -> None:
    rule = needs_approval(audience="payments", approvers=2)
    agent = payment_agent(store_url, approval={"pay": rule})
    async with serve(agent, api_keys=KEYS) as client:
        _, paused = await paused_turn(client, auth("alice"))
        token = paused["pause_token"]
        assert (paused["approvals_required"], paused["approvals"]) == (2, [])
        assert paused["allow_requester"] is False

        own = await resume(client, "alice", token)
        assert own.status_code == 403 and own.json()["error"]["code"] == "own_request"
        assert "may not approve" in own.json()["error"]["message"]

        counted = await resume(client, "carol", token)
        assert counted.status_code == 202, counted.text
        outcome = counted.json()
        assert outcome["status"] == "paused"
        assert [v["principal"] for v in outcome["pause"]["approvals"]] == ["carol"]
        assert outcome["pause"]["approvals_required"] == 2
        (pause,) = await listed(client, "dave")
        assert [v["principal"] for v in pause["approvals"]] == ["carol"]
        assert pause["approvals"][0]["at"]

        again = await resume(client, "carol", token)
        assert again.status_code == 409 and again.json()["error"]["code"] == "already_approved"

        done = await resume(client, "dave", token)
        assert done.status_code == 200 and done.json()["status"] == "complete"
        assert await listed(client, "erin") == []


async def test_a_counted_approval_asked_as_a_stream_is_a_202_and_an_event_to_the_client(
    store_url: str,
) -> None:
    rule = needs_approval(audience="payments", approvers=3)
    agent = payment_agent(store_url, approval={"pay": rule})
    app = create_app(agent, api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as http:
        _, paused = await paused_turn(http, auth("alice"))
        token = paused["pause_token"]
        streamed = await resume(http, "carol", token, headers={})
        assert streamed.status_code == 202
        assert streamed.headers["content-type"].startswith("application/json")

        url = str(http.base_url)
        async with AsyncSymfonicClient(url, api_key="key-dave") as dave:
            events = [e async for e in dave.resume_stream(token, APPROVE)]
        (recorded,) = events
        assert isinstance(recorded, ApprovalRecordedEvent)
        assert [v.principal for v in recorded.approvals] == ["carol", "dave"]
        assert recorded.pause_token == token

        async with AsyncSymfonicClient(url, api_key="key-erin") as erin:
            done = await erin.resume(token, APPROVE)
        assert done.status == "complete"


async def test_a_counted_approval_is_pause_approved_on_the_feed_with_the_votes(
    store_url: str,
) -> None:
    rule = needs_approval(audience="payments", approvers=2)
    agent = payment_agent(store_url, approval={"pay": rule})
    app = create_app(agent, api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as http:
        _, paused = await paused_turn(http, auth("alice"))
        async with following(http, auth("dave")) as feed:
            await feed.until("pauses.snapshot")
            assert (await resume(http, "carol", paused["pause_token"])).status_code == 202
            told = await feed.until("pause.approved", paused["pause_id"])
        assert told.data["state"] == "pending"
        assert [v["principal"] for v in told.data["pause"]["approvals"]] == ["carol"]
        assert told.data["pause"]["approvals_required"] == 2
        assert told.data["pause"]["token"] == paused["pause_token"]
