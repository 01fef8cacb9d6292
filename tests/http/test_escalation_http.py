"""Escalation and reassignment through the real app, on SQLite and PostgreSQL.

The app's sweeper escalates an unanswered approval: the new audience is told on
its feed, with the token, and may answer; the audience before keeps or loses
it. An operator reassigns a pending pause over HTTP; anyone else is refused,
and so is a pause that is no longer pending.
"""

from __future__ import annotations

import logging

import httpx
import pytest

from feed_support import following
from http_support import (
    APPROVE,
    JSON,
    Clock,
    audit_sealed,
    auth,
    pause_row,
    paused_turn,
    payment_agent,
    uvicorn_serving,
)
from symfonic import SymfonicAgent, escalation, needs_approval
from symfonic.core.contracts.types import PauseState
from symfonic.server.app import create_app

pytestmark = pytest.mark.anyio

KEYS = (
    "alice=key-alice,carol=key-carol:approver,tom=key-tom:team-leads,olga=key-olga:operator,"
    "ida=key-ida:auditor"
)


def escalating_agent(store_url: str, clock: Clock, *, keep: bool = True) -> SymfonicAgent:
    rule = needs_approval(
        audience="approver",
        escalate=[escalation(after=60, audience="team-leads", keep_previous=keep)],
    )
    return payment_agent(store_url, approval={"pay": rule}, clock=clock)


async def pending_ids(client: httpx.AsyncClient, name: str) -> list[str]:
    response = await client.get("/v1/pauses", headers=auth(name))
    assert response.status_code == 200, response.text
    return [p["pause_id"] for p in response.json()["pauses"]]


@pytest.mark.parametrize("keep", [True, False])
async def test_the_sweeper_escalates_and_the_new_audience_is_told_and_answers(
    store_url: str, keep: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="symfonic.pauses")
    clock = Clock()
    agent = escalating_agent(store_url, clock, keep=keep)
    app = create_app(agent, api_keys=KEYS, sweep_interval=0.05)
    async with uvicorn_serving(app) as client:
        _, paused = await paused_turn(client, auth("alice"))
        pause_id = paused["pause_id"]
        assert await pending_ids(client, "tom") == []
        async with following(client, auth("tom")) as feed:
            await feed.until("pauses.snapshot")
            clock.advance(61)
            told = await feed.until("pause.escalated", pause_id)
        assert told.data["readdressed"]["previous"] == "approver"
        assert told.data["readdressed"]["after"] == 60
        assert told.data["pause"]["audience"] == "team-leads"
        token = told.data["pause"]["token"]
        assert await pending_ids(client, "carol") == ([pause_id] if keep else [])
        if not keep:
            refused = await client.post(
                "/v1/resume", json={"token": token, "answer": APPROVE}, headers=auth("carol")
            )
            assert refused.status_code == 403, refused.text
        answered = await client.post(
            "/v1/resume", json={"token": token, "answer": APPROVE}, headers={**auth("tom"), **JSON}
        )
        assert answered.status_code == 200, answered.text
        assert answered.json()["status"] == "complete"
        row = await pause_row(agent, pause_id)
        assert (row.answered_by, row.escalation_step) == ("tom", 1)
    # The worker that applied the step says so in the log, once, with its fields.
    [logged] = [r for r in caplog.records if "escalated" in r.getMessage()]
    assert logged.getMessage() == (
        f"pause {pause_id} escalated: nobody answered it 60 s after it was asked, "
        "so it went from approver to team-leads"
    )
    fields = logged.symfonic  # type: ignore[attr-defined]
    assert (fields["event"], fields["previous"], fields["audience"], fields["step"]) == (
        "pause.escalated",
        "approver",
        "team-leads",
        1,
    )


async def test_an_operator_reassigns_a_pending_pause_and_no_one_else_may(store_url: str) -> None:
    clock = Clock()
    agent = escalating_agent(store_url, clock)
    app = create_app(agent, api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as client:
        _, paused = await paused_turn(client, auth("alice"))
        path = f"/v1/pauses/{paused['pause_id']}/reassign"
        body = {"audience": "team-leads", "reason": "carol is away"}

        for name in ("alice", "carol"):
            refused = await client.post(path, json=body, headers=auth(name))
            assert refused.status_code == 403, refused.text
            assert refused.json()["error"]["code"] == "forbidden"
        unknown = await client.post(
            "/v1/pauses/nosuchpause/reassign", json=body, headers=auth("olga")
        )
        assert unknown.status_code == 404

        async with following(client, auth("carol")) as feed:
            await feed.until("pauses.snapshot")
            done = await client.post(path, json=body, headers=auth("olga"))
            assert done.status_code == 200, done.text
            # The audience it left is told, without a token, so its view drops it.
            told = await feed.until("pause.reassigned", paused["pause_id"])
        assert "pause" not in told.data
        assert told.data["readdressed"] == {
            "kind": "reassigned",
            "previous": "approver",
            "audience": "team-leads",
            "at": told.data["readdressed"]["at"],
            "by": "olga",
            "reason": "carol is away",
        }
        view = done.json()
        assert (view["audience"], view["token"]) == ("team-leads", None)
        assert await pending_ids(client, "tom") == [paused["pause_id"]]
        assert await pending_ids(client, "carol") == []

        rejected = await client.post(
            "/v1/resume",
            json={"token": paused["pause_token"], "answer": {"decision": "reject"}},
            headers=auth("tom"),
        )
        assert rejected.status_code == 200, rejected.text
        late = await client.post(path, json=body, headers=auth("olga"))
        assert late.status_code == 409, late.text
        assert late.json()["error"]["code"] == "pause_not_pending"
        row = await pause_row(agent, paused["pause_id"])
        assert row.state is PauseState.PUBLISHED
        # The auditor reads who handed it over, from whom to whom, and why; once.
        await audit_sealed(client)
        trail = await client.get("/v1/audit", headers=auth("ida"))
    records = [r for r in trail.json()["records"] if r["pause_id"] == paused["pause_id"]]
    moved = [r for r in records if r["event"] == "reassigned"]
    assert [(r["principal"], r["from_audience"], r["to_audience"], r["reason"]) for r in moved] == [
        ("olga", "approver", "team-leads", "carol is away")
    ]
    assert [r["event"] for r in records] == ["asked", "reassigned", "answered", "published"]
