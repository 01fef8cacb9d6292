"""Four eyes over HTTP, through the real app, on SQLite and PostgreSQL.

alice asks and is refused with 403 ``own_request``; carol's approval is counted
with 202 and the pause, listed, says where the vote stands; carol again gets
the same 202, counted once; dave's approval runs the turn on, once. On two
workers, dave's edit resets the count: every view shows his arguments, digest
and vote, carol's approval of the old digest is 409 ``stale_question``, and
erin's runs the edited call once. An edit words the question again from the
edited arguments by the rule's description: the pause listed and its
``pause.approved`` on the feed say "Pay 4 EUR for alice" (worded for who asked,
not for dave), and a description that fails on the edited arguments asks the
default question. A request for a stream whose approval is only counted gets
the same 202 JSON, and the typed client reads it as an ``approval.recorded``
event.
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
from symfonic.client import AsyncSymfonicClient
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.types import ApprovalRecordedEvent
from symfonic.server.app import create_app

pytestmark = pytest.mark.anyio

KEYS = (
    "alice=key-alice:payments,carol=key-carol:payments,dave=key-dave:payments,"
    "erin=key-erin:payments"
)


async def resume(
    client: httpx.AsyncClient,
    name: str,
    token: str,
    headers: dict[str, str] = JSON,
    answer: dict[str, Any] = APPROVE,
    digest: str | None = None,
) -> httpx.Response:
    body: dict[str, Any] = {"token": token, "answer": answer}
    if digest is not None:
        body["args_digest"] = digest
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
        assert again.status_code == 202, again.text
        assert again.json() == counted.json()  # a replay: the same outcome, counted once

        done = await resume(client, "dave", token)
        assert done.status_code == 200 and done.json()["status"] == "complete"
        assert await listed(client, "erin") == []


async def test_an_edit_on_another_worker_resets_the_count_and_runs_once(store_url: str) -> None:
    paid: list[int] = []

    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return f"paid {amount}"

    def worker() -> Any:
        rule = needs_approval(audience="payments", approvers=2)
        return payment_agent(store_url, tool=pay, approval={"pay": rule})

    async with serve(worker(), api_keys=KEYS) as one, serve(worker(), api_keys=KEYS) as two:
        _, paused = await paused_turn(one, auth("alice"))
        token, asked = paused["pause_token"], paused["args_digest"]
        assert (await resume(two, "carol", token, digest=asked)).status_code == 202

        edit = {"decision": "edit", "args": {"amount": 4}}
        edited = await resume(one, "dave", token, answer=edit, digest=asked)
        assert edited.status_code == 202, edited.text
        proposed = edited.json()["pause"]
        assert [v["principal"] for v in proposed["approvals"]] == ["dave"]
        assert proposed["args_digest"] not in (None, asked)
        shown = await two.get("/v1/pauses?details=true", headers=auth("erin"))
        (listed_pause,) = shown.json()["pauses"]
        assert listed_pause["tool_args"] == {"amount": 4}
        assert listed_pause["args_digest"] == proposed["args_digest"]
        assert [v["principal"] for v in listed_pause["approvals"]] == ["dave"]

        stale = await resume(two, "carol", token, digest=asked)
        assert stale.status_code == 409 and stale.json()["error"]["code"] == "stale_question"
        done = await resume(two, "erin", token, digest=proposed["args_digest"])
        assert done.status_code == 200 and done.json()["status"] == "complete", done.text
        assert paid == [4]


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


def worded(args: dict[str, Any], principal: Principal) -> str:
    """The question, for the principal who asked, also when an edit words it again."""
    if args["amount"] > 100:
        raise ValueError("amounts over 100 have no wording")
    return f"Pay {args['amount']} EUR for {principal.name}"


async def test_an_edit_words_the_question_again_for_every_view(store_url: str) -> None:
    rule = needs_approval(audience="payments", approvers=2, description=worded)
    agent = payment_agent(store_url, approval={"pay": rule})
    app = create_app(agent, api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as http:
        _, paused = await paused_turn(http, auth("alice"))
        assert paused["query"] == "Pay 5 EUR for alice"
        async with following(http, auth("erin")) as feed:
            await feed.until("pauses.snapshot")
            edit = {"decision": "edit", "args": {"amount": 4}}
            edited = await resume(http, "dave", paused["pause_token"], answer=edit)
            assert edited.status_code == 202, edited.text
            told = await feed.until("pause.approved", paused["pause_id"])
        assert edited.json()["pause"]["query"] == "Pay 4 EUR for alice"
        assert told.data["pause"]["query"] == "Pay 4 EUR for alice"
        (pause,) = await listed(http, "erin")
        assert (pause["query"], pause["args_digest"]) == (
            "Pay 4 EUR for alice",
            told.data["pause"]["args_digest"],
        )
        found = await http.get("/v1/pauses?q=pay 4 eur for", headers=auth("erin"))
        assert [p["pause_id"] for p in found.json()["pauses"]] == [paused["pause_id"]]


async def test_a_description_that_fails_on_the_edited_call_asks_the_default_question(
    store_url: str,
) -> None:
    rule = needs_approval(audience="payments", approvers=2, description=worded)
    agent = payment_agent(store_url, approval={"pay": rule})
    async with serve(agent, api_keys=KEYS) as client:
        _, paused = await paused_turn(client, auth("alice"))
        edit = {"decision": "edit", "args": {"amount": 500}}
        edited = await resume(client, "dave", paused["pause_token"], answer=edit)
        assert edited.status_code == 202, edited.text
        (pause,) = await listed(client, "erin")
        assert pause["query"] == "Approve pay?"
        done = await resume(client, "erin", paused["pause_token"], digest=pause["args_digest"])
        assert done.status_code == 200 and done.json()["status"] == "complete", done.text
