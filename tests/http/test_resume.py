"""POST /v1/resume over the real app: every refusal before the claim, every ending after it.

Each test ends by reading the pause row: a refused request leaves it ``pending``
(the token unspent), a resume that published leaves it ``published``, and one
that failed after its claim leaves it ``abandoned`` -- never ``claimed``.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import anyio
import jsonschema
import pytest

from http_support import (
    APPROVE,
    JSON,
    KEYS,
    Clock,
    Gate,
    abandoning_turn,
    approved,
    auth,
    frames,
    pause_row,
    paused_turn,
    payment_agent,
    respellings,
    serve,
    served_pause,
)
from symfonic import Limits, Quota
from symfonic.core.contracts.store import PauseRecord
from symfonic.core.contracts.types import PauseState
from symfonic.testing import call, calls, reply

pytestmark = pytest.mark.anyio


async def test_approved_resume_streams_and_publishes(store_url: str) -> None:
    async with served_pause(store_url) as (agent, client, session_id, paused):
        response = await client.post(
            "/v1/resume", json={"token": paused["pause_token"], "answer": APPROVE}
        )
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = frames(response.text)
        assert [f.event for f in events] == ["turn.started", "tool.result", "text.delta",
                                             "response.complete"]
        assert [f.id for f in events] == ["1", "2", "3", "4"]
        assert events[0].data["resumed"] is True
        assert events[1].data == {"tool_call_id": paused["tool_call_id"], "name": "pay",
                                  "content": "paid 5", "status": "ok"}
        assert events[-1].data == {"answer": "Paid.", "revision": 1}
        row = await pause_row(agent, paused["pause_id"])
        assert (row.state, row.answered_by, row.answer) == (PauseState.PUBLISHED, "local", APPROVE)
        session = (await client.get(f"/v1/sessions/{session_id}")).json()
        assert (session["revision"], session["status"]) == (1, "idle")


async def test_a_resume_over_http_reads_its_pause_once(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with served_pause(store_url) as (agent, client, _, paused):
        reads: list[str] = []
        read_pause = agent.store.get_pause

        async def counted(pause_id: str) -> PauseRecord | None:
            reads.append(pause_id)
            return await read_pause(pause_id)

        monkeypatch.setattr(agent.store, "get_pause", counted)
        response = await client.post(
            "/v1/resume", json={"token": paused["pause_token"], "answer": APPROVE},
            headers=JSON,
        )
        assert response.json()["status"] == "complete"
        # Finding the agent read it; the resume itself did not read it again.
        assert reads == [paused["pause_id"]]


async def test_resume_json_variant_and_identical_replay(store_url: str) -> None:
    async with served_pause(store_url) as (agent, client, session_id, paused):
        body = {"token": paused["pause_token"], "answer": APPROVE}
        first = await client.post("/v1/resume", json=body, headers=JSON)
        assert first.status_code == 200
        assert first.headers["content-type"] == "application/json"
        assert first.json() == {"status": "complete", "session_id": session_id,
                                "revision": 1, "answer": "Paid.", "pause": None, "error": None}
        again = await client.post("/v1/resume", json=body, headers=JSON)
        assert again.json() == first.json()
        different = await client.post(
            "/v1/resume", json={**body, "answer": {"decision": "reject"}}, headers=JSON
        )
        assert different.status_code == 409
        assert different.json()["error"]["code"] == "already_answered"
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.PUBLISHED


async def test_second_pause_supersedes_the_first(store_url: str) -> None:
    twice = [call("pay", {"amount": 7}), reply("Paid twice.")]
    async with served_pause(store_url, after=twice) as (agent, client, session_id, first):
        response = await client.post(
            "/v1/resume", json={"token": first["pause_token"], "answer": APPROVE}
        )
        events = frames(response.text)
        assert events[-1].event == "turn.paused"
        second = events[-1].data
        assert second["pause_id"] != first["pause_id"]
        old, new = await pause_row(agent, first["pause_id"]), await pause_row(
            agent, second["pause_id"]
        )
        assert (old.state, new.state) == (PauseState.SUPERSEDED, PauseState.PENDING)
        assert new.supersedes == old.pause_id
        view = (await client.get(f"/v1/sessions/{session_id}")).json()
        assert view["status"] == "paused"
        assert view["pending_pause"]["pause_id"] == second["pause_id"]
        assert view["pending_pause"]["token"] == second["pause_token"]
        stale = await client.post(
            "/v1/resume", json={"token": first["pause_token"], "answer": {"decision": "reject"}}
        )
        assert (stale.status_code, stale.json()["error"]["code"]) == (409, "already_answered")
        replay = await client.post(
            "/v1/resume", json={"token": first["pause_token"], "answer": APPROVE}
        )
        assert [f.event for f in frames(replay.text)] == ["turn.started", "turn.paused"]
        assert frames(replay.text)[-1].data["pause_token"] == second["pause_token"]
        done = await approved(client, second["pause_token"])
        assert (done["status"], done["revision"]) == ("complete", 1)
        assert (await pause_row(agent, second["pause_id"])).state is PauseState.PUBLISHED


async def test_invalid_answer_is_422_and_the_token_is_not_spent(store_url: str) -> None:
    async with served_pause(store_url) as (agent, client, _, paused):
        bad = await client.post(
            "/v1/resume", json={"token": paused["pause_token"], "answer": {"decision": "maybe"}}
        )
        assert bad.status_code == 422
        assert bad.json()["error"]["code"] == "invalid_answer"
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.PENDING
        assert (await approved(client, paused["pause_token"]))["status"] == "complete"


async def test_a_refused_answer_says_what_was_wrong_in_words(sqlite_url: str) -> None:
    async with served_pause(sqlite_url) as (_, client, _, paused):
        said = []
        for answer in [{"decision": "maybe"}, {"decision": "edit", "args": {"amount": "five"}}]:
            bad = await client.post(
                "/v1/resume", json={"token": paused["pause_token"], "answer": answer}
            )
            assert bad.status_code == 422
            said.append(bad.json()["error"]["message"])
        assert said == [
            'decision must be one of "approve", "edit" or "reject"',
            "amount must be a whole number",
        ]


async def test_answer_is_required_unless_cancelled_as_the_openapi_says(sqlite_url: str) -> None:
    agent = payment_agent(sqlite_url)
    async with serve(agent) as client:
        document = (await client.get("/openapi.json")).json()
        components = document["components"]["schemas"]
        # The request body's schema, its references resolved within the document.
        schema = {**components["ResumeRequest"], "components": document["components"]}
        _, paused = await paused_turn(client)
        token = paused["pause_token"]
        unanswered = [{"token": token}, {"token": token, "status": "resolved"}]
        for body in unanswered:
            assert not jsonschema.Draft202012Validator(schema).is_valid(body), body
            refused = await client.post("/v1/resume", json=body)
            assert (refused.status_code, refused.json()["error"]["code"]) == (
                422, "invalid_request"
            )
            assert "answer is required" in refused.json()["error"]["message"]
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.PENDING
        declined = {"token": token, "status": "cancelled"}
        assert jsonschema.Draft202012Validator(schema).is_valid(declined)
        assert jsonschema.Draft202012Validator(schema).is_valid({"token": token, "answer": None})
        done = await client.post("/v1/resume", json=declined, headers=JSON)
        assert done.json()["status"] == "complete"
        row = await pause_row(agent, paused["pause_id"])
        assert (row.state, row.answer_status) == (PauseState.PUBLISHED, "cancelled")


async def test_unknown_or_forged_token_is_404(sqlite_url: str) -> None:
    async with served_pause(sqlite_url) as (agent, client, _, paused):
        forged = paused["pause_token"][:-4] + ("AAAA" if not paused["pause_token"].endswith(
            "AAAA") else "BBBB")
        unknown = agent.token_for(replace(await pause_row(agent, paused["pause_id"]),
                                          pause_id=uuid.uuid4().hex))
        for token in ["nope", forged, unknown]:
            response = await client.post("/v1/resume", json={"token": token, "answer": APPROVE})
            assert response.status_code == 404
            assert response.json()["error"]["code"] == "pause_not_found"
            assert token not in response.text
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.PENDING


async def test_a_respelled_token_is_404_and_spends_nothing(sqlite_url: str) -> None:
    async with served_pause(sqlite_url) as (agent, client, _, paused):
        for token in respellings(paused["pause_token"]):
            response = await client.post("/v1/resume", json={"token": token, "answer": APPROVE})
            assert response.status_code == 404, repr(token)
            assert response.json()["error"]["code"] == "pause_not_found"
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.PENDING
        assert (await approved(client, paused["pause_token"]))["status"] == "complete"


async def test_audience_scope_answers_and_is_recorded(store_url: str) -> None:
    agent = payment_agent(store_url, approval={"pay": "approver"})
    async with serve(agent, api_keys=KEYS) as client:
        session_id, paused = await paused_turn(client, auth("alice"))
        view = (await client.get(f"/v1/sessions/{session_id}", headers=auth("alice"))).json()
        assert view["pending_pause"]["audience"] == "approver"
        assert view["pending_pause"]["token"] is None
        body = {"token": paused["pause_token"], "answer": APPROVE}
        for name in ["alice", "bob"]:
            refused = await client.post("/v1/resume", json=body, headers=auth(name))
            assert refused.status_code == 403
            assert refused.json()["error"]["code"] == "forbidden"
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.PENDING
        listed = (await client.get("/v1/pauses", headers=auth("carol"))).json()["pauses"]
        assert [p["pause_id"] for p in listed] == [paused["pause_id"]]
        assert (await client.get("/v1/pauses", headers=auth("alice"))).json()["pauses"] == []
        done = await client.post("/v1/resume", json=body, headers={**auth("carol"), **JSON})
        assert done.json()["status"] == "complete"
        row = await pause_row(agent, paused["pause_id"])
        assert (row.state, row.answered_by, row.answer) == (PauseState.PUBLISHED, "carol", APPROVE)
        assert row.answered_at is not None


async def test_expired_pause_is_410(sqlite_url: str) -> None:
    clock = Clock()
    async with served_pause(sqlite_url, pause_ttl=60, clock=clock) as (agent, client, _, paused):
        clock.advance(61)
        response = await client.post(
            "/v1/resume", json={"token": paused["pause_token"], "answer": APPROVE}
        )
        assert response.status_code == 410
        assert response.json()["error"]["code"] == "pause_expired"
        assert (await client.get("/v1/pauses")).json()["pauses"] == []
        await agent.sweep()
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.EXPIRED


async def test_quota_refusal_is_429_and_leaves_the_token_unspent(store_url: str) -> None:
    ticks = [0.0]
    agent = payment_agent(store_url, quota=Quota(turns=1, per_seconds=30, clock=lambda: ticks[0]))
    async with serve(agent, api_keys=KEYS) as client:
        _, paused = await paused_turn(client, auth("alice"))
        body = {"token": paused["pause_token"], "answer": APPROVE}
        refused = await client.post("/v1/resume", json=body, headers=auth("alice"))
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "30"
        assert refused.json()["error"]["code"] == "budget_refused"
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.PENDING
        ticks[0] += 30
        done = await client.post("/v1/resume", json=body, headers={**auth("alice"), **JSON})
        assert done.json()["status"] == "complete"
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.PUBLISHED


async def test_a_claimed_pause_refuses_a_second_resume_and_new_turns(store_url: str) -> None:
    gate = Gate()
    async with served_pause(store_url, tool=gate.pay) as (agent, client, session_id, paused):
        body = {"token": paused["pause_token"], "answer": APPROVE}
        results: list[int] = []

        async def resume() -> None:
            results.append((await client.post("/v1/resume", json=body)).status_code)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(resume)
            await gate.entered.wait()
            assert (await pause_row(agent, paused["pause_id"])).state is PauseState.CLAIMED
            twice = await client.post("/v1/resume", json=body)
            assert (twice.status_code, twice.json()["error"]["code"]) == (409, "already_claimed")
            turn = await client.post(
                f"/v1/sessions/{session_id}/turns",
                json={"message": "hello", "on_pending_pause": "abandon"},
            )
            assert (turn.status_code, turn.json()["error"]["code"]) == (409, "session_busy")
            view = (await client.get(f"/v1/sessions/{session_id}")).json()
            assert view["status"] == "running"
            gate.release.set()
        assert results == [200]
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.PUBLISHED
        assert gate.calls == [5]


async def test_abandoned_pause_is_410(sqlite_url: str) -> None:
    async with served_pause(sqlite_url) as (agent, client, session_id, paused):
        turn = await abandoning_turn(client, session_id, "never mind")
        assert turn.status_code == 200
        response = await client.post(
            "/v1/resume", json={"token": paused["pause_token"], "answer": APPROVE}
        )
        assert (response.status_code, response.json()["error"]["code"]) == (410, "pause_abandoned")
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.ABANDONED


# ways a resumed stream ends in an error; each leaves the pause abandoned ------------


def _fail() -> None:
    raise RuntimeError("the provider is down")


ENDINGS = {
    "tool_limit": dict(after=[call("pay", {"amount": 6})], limits=Limits(max_tool_rounds=1)),
    "empty_answer": dict(after=[reply("")]),
    "budget_exhausted": dict(after=[reply("never")], limits=Limits(max_model_calls=1)),
    "model_error": dict(after=[lambda: _fail()]),
}


@pytest.mark.parametrize("code", sorted(ENDINGS))
async def test_resumed_turn_error_endings_abandon_the_pause(store_url: str, code: str) -> None:
    options = ENDINGS[code]
    async with served_pause(store_url, **options) as (agent, client, session_id, paused):
        response = await client.post(
            "/v1/resume", json={"token": paused["pause_token"], "answer": APPROVE}
        )
        assert response.status_code == 200
        events = frames(response.text)
        assert events[0].event == "turn.started"
        assert [f.event for f in events].count("error") == 1
        assert events[-1].event == "error"
        assert events[-1].data["code"] == code
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.ABANDONED
        view = (await client.get(f"/v1/sessions/{session_id}")).json()
        assert (view["revision"], view["status"]) == (0, "idle")


async def test_event_guard_over_plan_is_budget_exhausted(sqlite_url: str) -> None:
    notes = calls(*[("note", {"text": str(i)}, None) for i in range(3)])
    options: dict[str, Any] = dict(after=[notes, reply("ok")], limits=Limits(max_tool_calls=2))
    async with served_pause(sqlite_url, **options) as (agent, client, _, paused):
        outcome = await approved(client, paused["pause_token"])
        assert outcome["status"] == "failed"
        assert outcome["error"]["code"] == "budget_exhausted"
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.ABANDONED


async def test_late_revision_conflict_abandons_the_pause(store_url: str) -> None:
    gate = Gate()
    async with served_pause(store_url, tool=gate.pay) as (agent, client, session_id, paused):
        got: list[str] = []

        async def resume() -> None:
            response = await client.post(
                "/v1/resume", json={"token": paused["pause_token"], "answer": APPROVE}
            )
            got.append(response.text)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(resume)
            await gate.entered.wait()
            # another writer publishes at the pause's base revision while the turn runs
            await agent.seed_history(session_id, [{"role": "human", "content": "imported"}])
            gate.release.set()
        events = frames(got[0])
        assert events[-1].event == "error"
        assert events[-1].data["code"] == "revision_conflict"
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.ABANDONED
