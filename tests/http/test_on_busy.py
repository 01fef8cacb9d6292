"""A second message on a busy session: ``on_busy`` over the real app, on both stores.

``reject`` is today's 409 and the default. ``enqueue`` answers 202 with a run
that reads ``queued`` until the turn before it ends, then runs, in order, each
message once; it is its session owner's alone (404 to anyone else), and a
cancel takes it out of the queue. Every refusal comes before the 202.
"""

from __future__ import annotations

import anyio
import pytest

from busy_support import (
    ALICE,
    BOB,
    Holds,
    busy_session,
    ended,
    holding_agent,
    queued,
    replayed,
    said,
    send,
)
from http_support import KEYS, frames, new_session, serve

pytestmark = pytest.mark.anyio


async def test_enqueued_messages_run_after_the_turn_in_order_once_each(store_url: str) -> None:
    holds = Holds()
    async with serve(holding_agent(store_url, holds), api_keys=KEYS) as client:
        session_id, first = await busy_session(client, holds)
        runs = [await queued(client, session_id, text) for text in ("one", "two", "three")]
        for run in runs:
            assert run["events_url"] == f"/v1/runs/{run['run_id']}/events"
            view = (await client.get(f"/v1/runs/{run['run_id']}", headers=ALICE)).json()
            assert (view["state"], view["session_id"], view["outcome"]) == (
                "queued", session_id, None
            )
        holds.release("hold first")
        outcomes = [await ended(client, run["run_id"]) for run in runs]
        events = [await replayed(client, run["run_id"]) for run in runs]
        assert (await ended(client, first))["state"] == "complete"
        history = await said(client, session_id)
    assert [o["state"] for o in outcomes] == ["complete"] * 3
    assert [o["outcome"]["revision"] for o in outcomes] == [2, 3, 4]
    assert [[f.event for f in e] for e in events] == [
        ["turn.started", "text.delta", "response.complete"]
    ] * 3
    assert [e[0].data["run_id"] for e in events] == [run["run_id"] for run in runs]
    assert [e[-1].data["answer"] for e in events] == ["echo: one", "echo: two", "echo: three"]
    assert history == ["hold first", "one", "two", "three"]
    assert holds.calls == ["hold first"]


async def test_reject_is_still_the_default_and_refuses_a_busy_session(store_url: str) -> None:
    holds = Holds()
    async with serve(holding_agent(store_url, holds), api_keys=KEYS) as client:
        session_id, _ = await busy_session(client, holds)
        for fields in ({}, {"on_busy": "reject"}, {"on_busy": "reject", "background": True}):
            refused = await send(client, session_id, "again", ALICE, **fields)
            assert refused.status_code == 409, fields
            assert refused.json()["error"]["code"] == "session_busy"
        holds.release("hold first")
        with anyio.fail_after(5):
            while True:
                if await said(client, session_id) == ["hold first"]:
                    break
                await anyio.sleep(0.02)


async def test_enqueue_on_a_free_session_runs_at_once(store_url: str) -> None:
    async with serve(holding_agent(store_url, Holds()), api_keys=KEYS) as client:
        session_id = await new_session(client, **ALICE)
        run = await queued(client, session_id, "hello")
        assert (await ended(client, run["run_id"]))["outcome"]["answer"] == "echo: hello"
        assert await said(client, session_id) == ["hello"]


async def test_a_queued_run_is_its_owners_and_a_cancel_takes_it_out_of_the_queue(
    store_url: str,
) -> None:
    holds = Holds()
    async with serve(holding_agent(store_url, holds), api_keys=KEYS) as client:
        session_id, _ = await busy_session(client, holds)
        one, two = [await queued(client, session_id, text) for text in ("one", "two")]
        for url in (f"/v1/runs/{one['run_id']}", one["events_url"]):
            hidden = await client.get(url, headers=BOB)
            assert hidden.status_code == 404, url
            assert hidden.json()["error"]["code"] == "run_not_found"
        stolen = await client.post(f"/v1/runs/{one['run_id']}/cancel", headers=BOB)
        assert stolen.status_code == 404
        cancelled = await client.post(f"/v1/runs/{one['run_id']}/cancel", headers=ALICE)
        assert cancelled.status_code == 202, cancelled.text
        assert cancelled.json()["state"] == "cancelled"
        assert [f.data["code"] for f in await replayed(client, one["run_id"])] == [
            "run_cancelled"
        ]
        again = await client.post(f"/v1/runs/{one['run_id']}/cancel", headers=ALICE)
        assert again.status_code == 409
        holds.release("hold first")
        assert (await ended(client, two["run_id"]))["state"] == "complete"
        assert await said(client, session_id) == ["hold first", "two"]


async def test_every_refusal_of_enqueue_comes_before_the_202(store_url: str) -> None:
    async with serve(holding_agent(store_url, Holds()), api_keys=KEYS) as client:
        session_id = await new_session(client, **ALICE)
        paused = await send(client, session_id, "pay 5", ALICE)
        assert frames(paused.text)[-1].event == "turn.paused"
        refused = await send(client, session_id, "more", ALICE, on_busy="enqueue")
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "session_paused"
        other = await send(client, session_id, "mine", BOB, on_busy="enqueue")
        assert other.status_code == 404
        stale = await send(
            client, session_id, "more", ALICE, on_busy="enqueue", base_revision=3,
            on_pending_pause="abandon",
        )
        assert stale.status_code == 409
        assert stale.json()["error"]["code"] == "revision_conflict"
        # With abandon, the pending pause is no reason to wait: the message runs.
        run = await queued(client, session_id, "instead", on_pending_pause="abandon")
        assert (await ended(client, run["run_id"]))["state"] == "complete"
        assert await said(client, session_id) == ["instead"]


async def test_a_queued_message_that_rejects_a_pause_waits_for_its_answer(
    store_url: str,
) -> None:
    holds = Holds()
    async with serve(holding_agent(store_url, holds), api_keys=KEYS) as client:
        session_id = await new_session(client, **ALICE)
        started = await send(client, session_id, "holdpay first", ALICE, background=True)
        paying = started.json()["run_id"]
        await holds.until_entered("holdpay first")
        # Queued while the turn runs; the turn then pauses.
        run = await queued(client, session_id, "after the payment")
        holds.release("holdpay first")
        assert (await ended(client, paying))["state"] == "paused"
        token = [f for f in await replayed(client, paying)][-1].data["token"]
        await anyio.sleep(0.2)
        view = (await client.get(f"/v1/runs/{run['run_id']}", headers=ALICE)).json()
        assert view["state"] == "queued"
        resumed = await client.post(
            "/v1/resume", json={"token": token, "answer": {"decision": "approve"}},
            headers=ALICE,
        )
        assert resumed.status_code == 200, resumed.text
        assert (await ended(client, run["run_id"]))["state"] == "complete"
        assert await said(client, session_id) == ["holdpay first", "after the payment"]


async def test_the_python_api_queues_a_message_and_joins_it(store_url: str) -> None:
    holds = Holds()
    agent = holding_agent(store_url, holds)
    async with agent, anyio.create_task_group() as tasks:
        session_id = await agent.create_session("alice")
        first = await agent.start("hold first", session_id, "alice", tasks=tasks)
        await holds.until_entered("hold first")
        second = await agent.start("next", session_id, "alice", tasks=tasks, on_busy="enqueue")
        record = await agent.store.run_record(second.run_id or "")
        assert record is not None and record.state.value == "queued"
        holds.release("hold first")
        assert (await first.join()).status == "complete"
        with anyio.fail_after(5):
            result = await second.join()
    assert (result.answer, result.revision) == ("echo: next", 2)
