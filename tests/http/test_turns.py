"""POST /v1/sessions/{id}/turns over the real app: refusals as JSON, outcomes as SSE or JSON."""

from __future__ import annotations

import anyio
import pytest

from http_support import (
    JSON,
    KEYS,
    Gate,
    abandoning_turn,
    auth,
    frames,
    new_session,
    pause_row,
    paused_turn,
    payment_agent,
    scripted,
    serve,
    served_pause,
)
from symfonic import Limits, Quota, SymfonicAgent
from symfonic.core.contracts.types import PauseState
from symfonic.testing import call, reply

pytestmark = pytest.mark.anyio


def _greeter(store: str, **options: object) -> SymfonicAgent:
    return SymfonicAgent(model=scripted(reply("Hello there.")), store=store, **options)  # type: ignore[arg-type]


async def test_turn_streams_typed_frames_and_publishes(sqlite_url: str) -> None:
    async with serve(_greeter(sqlite_url)) as client:
        session_id = await new_session(client)
        response = await client.post(f"/v1/sessions/{session_id}/turns", json={"message": "hi"})
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        assert response.text.startswith("event: turn.started\ndata: {")
        events = frames(response.text)
        assert [f.event for f in events] == ["turn.started", "text.delta", "text.delta",
                                             "response.complete"]
        assert [f.id for f in events] == ["1", "2", "3", "4"]
        assert events[0].data == {"session_id": session_id, "run_id": events[0].data["run_id"],
                                  "agent": "assistant", "base_revision": 0, "resumed": False}
        assert "".join(f.data["text"] for f in events[1:3]) == "Hello there."
        assert events[-1].data == {"answer": "Hello there.", "revision": 1}
        view = (await client.get(f"/v1/sessions/{session_id}")).json()
        assert (view["revision"], view["status"]) == (1, "idle")
        assert [(m["role"], m["content"]) for m in view["messages"]] == [
            ("human", "hi"), ("ai", "Hello there.")
        ]


async def test_turn_json_variant(sqlite_url: str) -> None:
    async with serve(_greeter(sqlite_url)) as client:
        session_id = await new_session(client)
        response = await client.post(
            f"/v1/sessions/{session_id}/turns", json={"message": "hi", "base_revision": 0},
            headers=JSON,
        )
        assert response.headers["content-type"] == "application/json"
        assert response.json() == {"status": "complete", "session_id": session_id, "revision": 1,
                                   "answer": "Hello there.", "pause": None, "error": None}


async def test_paused_turn_json_carries_the_token(store_url: str) -> None:
    agent = payment_agent(store_url)
    async with serve(agent) as client:
        session_id = await new_session(client)
        outcome = (
            await client.post(
                f"/v1/sessions/{session_id}/turns", json={"message": "pay"}, headers=JSON
            )
        ).json()
        assert (outcome["status"], outcome["revision"]) == ("paused", 0)
        pause = outcome["pause"]
        assert pause["kind"] == "approval" and pause["token"].startswith("sfp_")
        row = await pause_row(agent, pause["pause_id"])
        assert row.state is PauseState.PENDING
        view = (await client.get(f"/v1/sessions/{session_id}")).json()
        assert view["status"] == "paused"
        assert view["pending_pause"]["token"] == pause["token"]


async def test_pending_pause_rejects_a_new_turn(store_url: str) -> None:
    async with served_pause(store_url) as (agent, client, session_id, paused):
        response = await client.post(f"/v1/sessions/{session_id}/turns", json={"message": "hi"})
        assert (response.status_code, response.json()["error"]["code"]) == (409, "session_paused")
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.PENDING


async def test_abandon_pending_pause_and_run_the_new_turn(store_url: str) -> None:
    async with served_pause(store_url) as (agent, client, session_id, paused):
        response = await abandoning_turn(client, session_id, "pay")
        assert response.json()["status"] == "paused"
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.ABANDONED
        assert (await pause_row(agent, response.json()["pause"]["pause_id"])).state is (
            PauseState.PENDING
        )


async def test_base_revision_mismatch_is_409_and_changes_nothing(store_url: str) -> None:
    async with served_pause(store_url) as (agent, client, session_id, paused):
        response = await client.post(
            f"/v1/sessions/{session_id}/turns",
            json={"message": "hi", "base_revision": 3, "on_pending_pause": "abandon"},
        )
        assert (response.status_code, response.json()["error"]["code"]) == (
            409, "revision_conflict"
        )
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.PENDING


@pytest.mark.parametrize("revision", [True, False, "0", 0.5, [0]])
async def test_base_revision_is_an_integer_not_a_boolean(
    sqlite_url: str, revision: object
) -> None:
    agent = payment_agent(sqlite_url)
    async with serve(agent) as client:
        session_id = await new_session(client)
        response = await client.post(
            f"/v1/sessions/{session_id}/turns", json={"message": "hi", "base_revision": revision}
        )
        assert (response.status_code, response.json()["error"]["code"]) == (
            422, "invalid_request"
        )
        assert "base_revision" in response.json()["error"]["message"]
        view = (await client.get(f"/v1/sessions/{session_id}")).json()
        assert (view["revision"], view["messages"]) == (0, [])


async def test_quota_refusal_of_a_turn_is_429_and_changes_nothing(sqlite_url: str) -> None:
    ticks = [0.0]
    agent = payment_agent(sqlite_url, quota=Quota(turns=1, per_seconds=60, clock=lambda: ticks[0]))
    async with serve(agent, api_keys=KEYS) as client:
        session_id, paused = await paused_turn(client, auth("alice"))
        response = await client.post(
            f"/v1/sessions/{session_id}/turns",
            json={"message": "hi", "on_pending_pause": "abandon"},
            headers=auth("alice"),
        )
        assert response.status_code == 429
        assert response.headers["retry-after"] == "60"
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.PENDING


async def test_second_turn_while_one_runs_is_409(store_url: str) -> None:
    gate = Gate()
    agent = SymfonicAgent(
        model=scripted(call("pay", {"amount": 1}), reply("done")), tools=[gate.pay],
        store=store_url,
    )
    async with serve(agent) as client:
        session_id = await new_session(client)
        url = f"/v1/sessions/{session_id}/turns"
        first: list[str] = []

        async def run_first() -> None:
            first.append((await client.post(url, json={"message": "go"})).text)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run_first)
            await gate.entered.wait()
            second = await client.post(url, json={"message": "again"})
            assert (second.status_code, second.json()["error"]["code"]) == (409, "session_busy")
            view = (await client.get(f"/v1/sessions/{session_id}")).json()
            assert view["status"] == "running"
            gate.release.set()
        assert frames(first[0])[-1].data == {"answer": "done", "revision": 1}
        view = (await client.get(f"/v1/sessions/{session_id}")).json()
        assert (view["status"], view["revision"]) == ("idle", 1)


def _fail() -> None:
    raise RuntimeError("the provider is down")


ENDINGS = {
    "tool_limit": dict(steps=[call("note", {"text": "a"}), call("note", {"text": "b"})],
                       limits=Limits(max_tool_rounds=1)),
    "empty_answer": dict(steps=[reply("")]),
    "budget_exhausted": dict(steps=[call("note", {"text": "a"}), reply("late")],
                             limits=Limits(max_model_calls=1)),
    "model_error": dict(steps=[lambda: _fail()]),
}


@pytest.mark.parametrize("code", sorted(ENDINGS))
async def test_first_turn_error_endings_publish_nothing(sqlite_url: str, code: str) -> None:
    def note(text: str) -> str:
        """Write a note."""
        return text

    options = dict(ENDINGS[code])
    agent = SymfonicAgent(
        model=scripted(*options.pop("steps")), tools=[note], store=sqlite_url,  # type: ignore[arg-type]
        **options,  # type: ignore[arg-type]
    )
    async with serve(agent) as client:
        session_id = await new_session(client)
        response = await client.post(f"/v1/sessions/{session_id}/turns", json={"message": "go"})
        events = frames(response.text)
        assert events[0].event == "turn.started"
        assert (events[-1].event, events[-1].data["code"]) == ("error", code)
        view = (await client.get(f"/v1/sessions/{session_id}")).json()
        assert (view["status"], view["revision"], view["messages"]) == ("idle", 0, [])
        assert await agent.store.session_pauses(session_id) == []
        again = await client.post(f"/v1/sessions/{session_id}/turns", json={"message": "go"})
        assert again.status_code == 200
