"""``on_busy`` ``interrupt`` and ``rollback``: the running turn cancelled, the new one run.

Over the real app, on both stores. The turn holding the session is cancelled
as a cancel of its run would: it publishes nothing (its tool is cancelled, a
resume's pause is ``abandoned``), and the new message runs on the history as it
was. ``rollback`` also leaves no run behind (404). A turn that interrupts and
is refused for another reason cancels nothing.
"""

from __future__ import annotations

import anyio
import httpx
import pytest

from busy_support import (
    ALICE,
    BOB,
    Holds,
    busy_session,
    ended,
    holding_agent,
    replayed,
    said,
    send,
)
from http_support import JSON, KEYS, frames, new_session, pause_row, serve
from symfonic.core.contracts.types import PauseState

pytestmark = pytest.mark.anyio


async def taken_over(
    client: httpx.AsyncClient, session_id: str, on_busy: str, **fields: object
) -> dict[str, object]:
    response = await send(
        client, session_id, "instead", {**ALICE, **JSON}, on_busy=on_busy, **fields
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


@pytest.mark.parametrize("on_busy", ["interrupt", "rollback"])
async def test_a_running_background_turn_is_cancelled_and_the_new_message_runs(
    store_url: str, on_busy: str
) -> None:
    holds = Holds()
    async with serve(holding_agent(store_url, holds), api_keys=KEYS) as client:
        session_id, first = await busy_session(client, holds)
        outcome = await taken_over(client, session_id, on_busy)
        assert (outcome["status"], outcome["answer"], outcome["revision"]) == (
            "complete", "echo: instead", 1
        )
        await holds.until_cancelled("hold first")
        run = await client.get(f"/v1/runs/{first}", headers=ALICE)
        events = await client.get(f"/v1/runs/{first}/events", headers=ALICE)
        history = await said(client, session_id)
    assert history == ["instead"]
    assert holds.cancelled == ["hold first"]
    if on_busy == "interrupt":
        assert run.json()["state"] == "cancelled"
        replay = frames(events.text)
        assert (replay[0].event, replay[-1].event) == ("turn.started", "error")
        assert replay[-1].data["code"] == "run_cancelled"
    else:
        assert (run.status_code, events.status_code) == (404, 404)
        assert run.json()["error"]["code"] == "run_not_found"


@pytest.mark.parametrize("on_busy", ["interrupt", "rollback"])
async def test_a_running_resume_is_cancelled_and_its_pause_abandoned(
    store_url: str, on_busy: str
) -> None:
    holds = Holds()
    agent = holding_agent(store_url, holds, approval={"hold"})
    async with serve(agent, api_keys=KEYS) as client:
        session_id = await new_session(client, **ALICE)
        paused = frames((await send(client, session_id, "hold it", ALICE)).text)[-1]
        assert paused.event == "turn.paused"
        body = {"token": paused.data["token"], "answer": {"decision": "approve"}}
        resumed = await client.post("/v1/resume", json={**body, "background": True},
                                    headers=ALICE)
        assert resumed.status_code == 202, resumed.text
        await holds.until_entered("hold it")
        outcome = await taken_over(client, session_id, on_busy)
        assert outcome["answer"] == "echo: instead"
        await holds.until_cancelled("hold it")
        pause = await pause_row(agent, paused.data["pause_id"])
        again = await client.post("/v1/resume", json=body, headers=ALICE)
        history = await said(client, session_id)
    assert pause.state is PauseState.ABANDONED
    assert again.status_code == 410
    assert history == ["instead"]


@pytest.mark.parametrize("on_busy", ["interrupt", "rollback"])
async def test_an_interrupted_attached_turn_publishes_nothing_even_once_the_session_is_free(
    store_url: str, on_busy: str
) -> None:
    holds = Holds()
    async with serve(holding_agent(store_url, holds), api_keys=KEYS) as client:
        session_id = await new_session(client, **ALICE)
        answers: list[httpx.Response] = []

        async def attached() -> None:
            answers.append(await send(client, session_id, "hold first", {**ALICE, **JSON}))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(attached)
            await holds.until_entered("hold first")
            # The new turn pauses: the session is free again at the revision the
            # attached turn started from, which must still publish nothing.
            paused = await send(client, session_id, "pay 5", ALICE, on_busy=on_busy)
            assert frames(paused.text)[-1].event == "turn.paused"
            holds.release("hold first")
        session = (await client.get(f"/v1/sessions/{session_id}", headers=ALICE)).json()
    (answer,) = answers
    assert answer.json()["status"] == "failed"
    assert (session["revision"], session["messages"], session["status"]) == (0, [], "paused")


@pytest.mark.parametrize("on_busy", ["interrupt", "rollback"])
async def test_an_attached_turn_interrupted_from_another_worker_stops_at_its_tool(
    store_url: str, on_busy: str
) -> None:
    holds = Holds()
    async with (
        serve(holding_agent(store_url, holds), api_keys=KEYS) as one,
        serve(holding_agent(store_url, holds), api_keys=KEYS) as two,
    ):
        session_id = await new_session(one, **ALICE)
        streamed: list[httpx.Response] = []

        async def attached() -> None:
            streamed.append(await send(one, session_id, "twice over", ALICE))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(attached)
            await holds.until_entered("twice over")
            outcome = await taken_over(two, session_id, on_busy)
            # Stopped in its first tool, on the worker streaming it: never released.
            await holds.until_cancelled("twice over")
        holds.release("second")
        history = await said(two, session_id)
    assert (outcome["status"], outcome["answer"], outcome["revision"]) == (
        "complete", "echo: instead", 1
    )
    assert holds.calls == ["twice over"]
    (stream,) = streamed
    ending = frames(stream.text)[-1]
    assert (ending.event, ending.data["code"]) == ("error", "run_cancelled")
    assert history == ["instead"]


async def test_a_refused_interrupt_cancels_nothing(store_url: str) -> None:
    holds = Holds()
    async with serve(holding_agent(store_url, holds), api_keys=KEYS) as client:
        session_id, first = await busy_session(client, holds)
        stale = await send(
            client, session_id, "instead", ALICE, on_busy="interrupt", base_revision=7
        )
        assert stale.status_code == 409, stale.text
        assert stale.json()["error"]["code"] == "revision_conflict"
        other = await send(client, session_id, "mine", BOB, on_busy="rollback")
        assert other.status_code == 404
        assert (await client.get(f"/v1/runs/{first}", headers=ALICE)).json()["state"] == (
            "running"
        )
        holds.release("hold first")
        assert (await ended(client, first))["state"] == "complete"
        assert [f.event for f in await replayed(client, first)][-1] == "response.complete"
        assert await said(client, session_id) == ["hold first"]
    assert holds.cancelled == []


async def test_the_python_api_interrupts_a_turn(store_url: str) -> None:
    holds = Holds()
    agent = holding_agent(store_url, holds)
    async with agent, anyio.create_task_group() as tasks:
        session_id = await agent.create_session("alice")
        first = await agent.start("hold first", session_id, "alice", tasks=tasks)
        await holds.until_entered("hold first")
        result = await agent.run("instead", session_id, "alice", on_busy="rollback")
        assert (result.answer, result.revision) == ("echo: instead", 1)
        await holds.until_cancelled("hold first")
        assert (await first.join()).status == "failed"
        assert first.run_id is not None
        assert (await agent.store.run_record(first.run_id)).state.value == "forgotten"  # type: ignore[union-attr]
