"""Background turns and resumes over the real app, and following a run's kept events.

A turn or resume sent with ``"background": true`` is refused exactly as an
attached one would be, before the 202; once accepted it runs with nobody
listening, and ``GET /v1/runs/{id}/events`` replays its events from the start
or after ``Last-Event-ID``, then follows it live, each event once. A run is
another principal's 404, and its events are gone after the TTL. A running
background run holds a place in its principal's share of streams, as an open
stream does, and gives it back when it ends.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import anyio
import httpx
import pytest

from feed_support import FeedReader
from http_support import (
    APPROVE,
    KEYS,
    Clock,
    Frame,
    Gate,
    auth,
    frames,
    new_session,
    pause_row,
    paused_turn,
    payment_agent,
    serve,
    uvicorn_serving,
)
from symfonic import needs_approval
from symfonic.core.contracts.types import PauseState
from symfonic.server.app import create_app
from symfonic.testing import reply

pytestmark = pytest.mark.anyio

ALICE, BOB = auth("alice"), auth("bob")


async def background_turn(
    client: httpx.AsyncClient, session_id: str, message: str = "pay 5", **headers: str
) -> dict[str, Any]:
    response = await client.post(
        f"/v1/sessions/{session_id}/turns",
        json={"message": message, "background": True},
        headers=headers,
    )
    assert response.status_code == 202, response.text
    return dict(response.json())


async def ended(client: httpx.AsyncClient, run_id: str, **headers: str) -> dict[str, Any]:
    """The run, once it is no longer running."""
    with anyio.fail_after(5):
        while True:
            run = (await client.get(f"/v1/runs/{run_id}", headers=headers)).json()
            if run["state"] != "running":
                return dict(run)
            await anyio.sleep(0.02)


async def replayed(client: httpx.AsyncClient, url: str, **headers: str) -> list[Frame]:
    response = await client.get(url, headers=headers)
    assert response.status_code == 200, response.text
    return frames(response.text)


async def test_a_background_turn_runs_with_no_listener_and_replays_in_full(
    store_url: str,
) -> None:
    agent = payment_agent(store_url)
    async with serve(agent, api_keys=KEYS) as client:
        session_id = await new_session(client, **ALICE)
        started = await background_turn(client, session_id, **ALICE)
        assert started["events_url"] == f"/v1/runs/{started['run_id']}/events"
        # The worker watches its runs on its one watch; the agent opens none beside it.
        assert agent.started_runs.watch is False
        run = await ended(client, started["run_id"], **ALICE)
        assert run["state"] == "paused" and run["session_id"] == session_id
        assert run["outcome"]["status"] == "paused"
        events = await replayed(client, started["events_url"], **ALICE)
    assert [f.event for f in events] == ["turn.started", "tool.call", "turn.paused"]
    assert [f.id for f in events] == ["1", "2", "3"]
    assert events[0].data["run_id"] == started["run_id"]
    # The token was not kept; it is minted again for the owner, who may answer.
    assert events[-1].data["token"].startswith("sfp_")
    assert events[-1].data["pause_id"] == run["outcome"]["pause_id"]


async def test_every_refusal_comes_before_the_202(store_url: str) -> None:
    async with serve(payment_agent(store_url), api_keys=KEYS) as client:
        session_id, paused = await paused_turn(client, ALICE)
        busy = await client.post(
            f"/v1/sessions/{session_id}/turns",
            json={"message": "again", "background": True},
            headers=ALICE,
        )
        assert busy.status_code == 409
        assert busy.json()["error"]["code"] == "session_paused"
        other = await client.post(
            f"/v1/sessions/{session_id}/turns",
            json={"message": "mine now", "background": True},
            headers=BOB,
        )
        assert other.status_code == 404
        wrong = await client.post(
            "/v1/resume",
            json={"token": paused["token"], "answer": {"no": 1}, "background": True},
            headers=ALICE,
        )
        assert wrong.status_code == 422
        stolen = await client.post(
            "/v1/resume",
            json={"token": paused["token"], "answer": APPROVE, "background": True},
            headers=BOB,
        )
        assert stolen.status_code == 403


async def test_a_background_resume_runs_its_tool_once_and_publishes(store_url: str) -> None:
    paid: list[int] = []

    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return f"paid {amount}"

    agent = payment_agent(store_url, tool=pay)
    async with serve(agent, api_keys=KEYS) as client:
        _, paused = await paused_turn(client, ALICE)
        response = await client.post(
            "/v1/resume",
            json={"token": paused["token"], "answer": APPROVE, "background": True},
            headers=ALICE,
        )
        assert response.status_code == 202, response.text
        run_id = response.json()["run_id"]
        # The pause was claimed before the 202: a second answer runs nothing (refused
        # while the run holds the claim, its outcome replayed once it published).
        await client.post(
            "/v1/resume", json={"token": paused["token"], "answer": APPROVE}, headers=ALICE
        )
        run = await ended(client, run_id, **ALICE)
        events = await replayed(client, f"/v1/runs/{run_id}/events", **ALICE)
        row = await pause_row(agent, paused["pause_id"])
    assert run["state"] == "complete"
    assert run["outcome"] == {
        "status": "complete", "revision": 1, "answer": "Paid.", "pause_id": None, "error": None
    }
    assert [f.event for f in events] == [
        "turn.started", "tool.result", "text.delta", "response.complete"
    ]
    assert paid == [5]
    assert row.state is PauseState.PUBLISHED


async def test_another_principal_gets_404_on_the_run_and_its_events(store_url: str) -> None:
    async with serve(payment_agent(store_url), api_keys=KEYS) as client:
        session_id = await new_session(client, **ALICE)
        run_id = (await background_turn(client, session_id, **ALICE))["run_id"]
        await ended(client, run_id, **ALICE)
        for url in (f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/events", "/v1/runs/nope"):
            response = await client.get(url, headers=BOB)
            assert response.status_code == 404, url
            assert response.json()["error"]["code"] == "run_not_found"


async def test_a_run_and_its_events_are_gone_after_the_ttl(store_url: str) -> None:
    clock = Clock()
    agent = payment_agent(store_url, clock=clock)
    async with serve(
        agent, api_keys=KEYS, sweep_interval=0.05, run_events_ttl=timedelta(minutes=10)
    ) as client:
        session_id = await new_session(client, **ALICE)
        run_id = (await background_turn(client, session_id, **ALICE))["run_id"]
        await ended(client, run_id, **ALICE)
        await anyio.sleep(0.2)  # a few sweeps: still within the TTL
        assert (await client.get(f"/v1/runs/{run_id}", headers=ALICE)).status_code == 200
        clock.advance(11 * 60)
        with anyio.fail_after(3):
            while True:
                if (await client.get(f"/v1/runs/{run_id}", headers=ALICE)).status_code == 404:
                    break
                await anyio.sleep(0.05)
        assert await agent.store.run_events_after(run_id, 0, limit=10) == []


async def test_a_follower_that_reconnects_with_last_event_id_gets_each_event_once(
    store_url: str,
) -> None:
    gate = Gate()
    agent = payment_agent(
        store_url,
        tool=gate.pay,
        approval=(),
        after=(reply("Paid."),),
    )
    app = create_app(agent, api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as client:
        session_id = await new_session(client, **ALICE)
        run_id = (await background_turn(client, session_id, **ALICE))["run_id"]
        url = f"/v1/runs/{run_id}/events"
        async with client.stream("GET", url, headers=ALICE) as response:
            reader = FeedReader(response)
            first = [await reader.next(), await reader.next()]
        assert [f.event for f in first] == ["turn.started", "tool.call"]
        await gate.entered.wait()
        gate.release.set()
        headers = {**ALICE, "Last-Event-ID": first[-1].id}
        async with client.stream("GET", url, headers=headers) as response:
            reader = FeedReader(response)
            rest = [await reader.next()]
            while rest[-1].event != "response.complete":
                rest.append(await reader.next())
    seen = first + rest
    assert [f.event for f in seen] == [
        "turn.started", "tool.call", "tool.result", "text.delta", "response.complete"
    ]
    assert [int(f.id) for f in seen] == [1, 2, 3, 4, 5]
    assert gate.calls == [5]


async def test_the_python_api_starts_a_run_and_joins_it(store_url: str) -> None:
    agent = payment_agent(store_url)
    async with agent, anyio.create_task_group() as tasks:
        run = await agent.start("pay 5", tasks=tasks)
        result = await run.join()
        assert result.status == "paused" and result.pause is not None
        record = await agent.store.run_record(run.run_id)
        assert record is not None and record.state.value == "paused"
        resumed = await agent.start_resume(result.pause.token, APPROVE, tasks=tasks)
        assert (await resumed.join()).answer == "Paid."
        kept = await agent.store.run_events_after(resumed.run_id, 0, limit=10)
        assert [e.event.type for e in kept] == [
            "turn.started", "tool.result", "text.delta", "response.complete"
        ]



async def test_a_background_approval_that_is_only_counted_starts_no_run(store_url: str) -> None:
    keys = "alice=key-alice:payments,carol=key-carol:payments,dave=key-dave:payments"
    rule = needs_approval(audience="payments", approvers=2)
    agent = payment_agent(store_url, approval={"pay": rule})
    async with serve(agent, api_keys=keys) as client:
        _, paused = await paused_turn(client, ALICE)
        body = {"token": paused["token"], "answer": APPROVE, "background": True}
        counted = await client.post("/v1/resume", json=body, headers=auth("carol"))
        assert counted.status_code == 202, counted.text
        assert "run_id" not in counted.json()
        assert counted.json()["status"] == "paused"
        last = await client.post("/v1/resume", json=body, headers=auth("dave"))
        assert last.status_code == 202, last.text
        run_id = last.json()["run_id"]
        # The audience that answered sees the run; the session's owner does too.
        run = await ended(client, run_id, **auth("dave"))
        assert run["state"] == "complete"
        assert (await client.get(f"/v1/runs/{run_id}", headers=ALICE)).status_code == 200


async def test_a_cancel_from_the_other_worker_stops_the_turn_and_publishes_nothing(
    store_url: str,
) -> None:
    gate = Gate()
    running_on_a = payment_agent(store_url, tool=gate.pay, approval=())
    async with (
        serve(running_on_a, api_keys=KEYS) as a,
        serve(payment_agent(store_url), api_keys=KEYS) as b,
    ):
        session_id = await new_session(a, **ALICE)
        run_id = (await background_turn(a, session_id, **ALICE))["run_id"]
        with anyio.fail_after(5):
            await gate.entered.wait()
            while True:  # the tool's call kept: what the cancel comes after
                if len(await running_on_a.store.run_events_after(run_id, 0, limit=5)) == 2:
                    break
                await anyio.sleep(0.02)
        cancelled = await b.post(f"/v1/runs/{run_id}/cancel", headers=ALICE)
        assert cancelled.status_code == 202, cancelled.text
        assert cancelled.json()["state"] == "cancelled"
        with anyio.fail_after(1.0):
            await gate.cancelled.wait()
        events = await replayed(b, f"/v1/runs/{run_id}/events", **ALICE)
        assert [f.event for f in events] == ["turn.started", "tool.call", "error"]
        assert events[-1].data["code"] == "run_cancelled"
        again = await b.post(f"/v1/runs/{run_id}/cancel", headers=ALICE)
        assert again.status_code == 409
        assert again.json()["error"]["code"] == "run_not_running"
        assert (await b.post(f"/v1/runs/{run_id}/cancel", headers=BOB)).status_code == 404
        session = (await b.get(f"/v1/sessions/{session_id}", headers=ALICE)).json()
        assert (session["revision"], session["status"], session["messages"]) == (0, "idle", [])
        assert (await ended(a, run_id, **ALICE))["state"] == "cancelled"
        # The session takes a new turn at once.
        turn = await b.post(
            f"/v1/sessions/{session_id}/turns", json={"message": "hello"}, headers=ALICE
        )
        assert turn.status_code == 200, turn.text
    assert gate.calls == []


async def test_a_cancelled_background_resume_abandons_its_pause(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="symfonic.pauses")
    gate = Gate()
    running_on_a = payment_agent(store_url, tool=gate.pay)
    async with (
        serve(running_on_a, api_keys=KEYS) as a,
        serve(payment_agent(store_url), api_keys=KEYS) as b,
    ):
        _, paused = await paused_turn(a, ALICE)
        body = {"token": paused["token"], "answer": APPROVE, "background": True}
        run_id = (await a.post("/v1/resume", json=body, headers=ALICE)).json()["run_id"]
        with anyio.fail_after(5):
            await gate.entered.wait()
        assert (await b.post(f"/v1/runs/{run_id}/cancel", headers=ALICE)).status_code == 202
        with anyio.fail_after(1.0):
            await gate.cancelled.wait()
        pause = await pause_row(running_on_a, paused["pause_id"])
        assert pause.state is PauseState.ABANDONED
        abandoned = [
            r.symfonic  # type: ignore[attr-defined]
            for r in caplog.records
            if r.name == "symfonic.pauses" and r.symfonic["state"] == "abandoned"  # type: ignore[attr-defined]
        ]
        assert [line["pause_id"] for line in abandoned] == [paused["pause_id"]]
        again = await b.post("/v1/resume", json={**body, "background": False}, headers=ALICE)
        assert again.status_code == 410
    assert gate.calls == []


async def test_whoever_read_the_final_event_reads_the_run_ended(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = payment_agent(store_url)
    async with serve(agent, api_keys=KEYS) as client:
        end_run_log = agent.store.end_run_log

        async def slow_end(*args: Any) -> bool:
            await anyio.sleep(0.3)  # a slow writer: the end commits late
            return await end_run_log(*args)

        monkeypatch.setattr(agent.store, "end_run_log", slow_end)
        session_id = await new_session(client, **ALICE)
        run_id = (await background_turn(client, session_id, **ALICE))["run_id"]
        # The stream ends at the run's final event; the run then reads ended.
        events = await replayed(client, f"/v1/runs/{run_id}/events", **ALICE)
        run = (await client.get(f"/v1/runs/{run_id}", headers=ALICE)).json()
    assert events[-1].event == "turn.paused"
    assert run["state"] == "paused" and run["outcome"]["pause_id"] == events[-1].data["pause_id"]


async def test_a_running_background_run_holds_a_place_in_its_principals_streams(
    store_url: str,
) -> None:
    gate = Gate()
    agent = payment_agent(store_url, tool=gate.pay, approval=())
    async with serve(agent, api_keys=KEYS, max_streams_per_principal=2) as client:
        sessions = [await new_session(client, **ALICE) for _ in range(3)]
        runs = [(await background_turn(client, s, **ALICE))["run_id"] for s in sessions[:2]]
        refused = await client.post(
            f"/v1/sessions/{sessions[2]}/turns",
            json={"message": "pay 5", "background": True},
            headers=ALICE,
        )
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"]["code"] == "too_many_streams"
        assert int(refused.headers["retry-after"]) > 0
        # Refused before anything ran: the third session is as it was.
        untouched = (await client.get(f"/v1/sessions/{sessions[2]}", headers=ALICE)).json()
        assert (untouched["revision"], untouched["status"]) == (0, "idle")
        # An attached stream counts against the same share; another principal has its own.
        attached = await client.post(
            f"/v1/sessions/{sessions[2]}/turns", json={"message": "pay 5"}, headers=ALICE
        )
        assert attached.status_code == 429
        bob = await new_session(client, **BOB)
        runs.append((await background_turn(client, bob, **BOB))["run_id"])
        gate.release.set()
        for run_id in runs[:2]:
            assert (await ended(client, run_id, **ALICE))["state"] == "complete"
        assert (await ended(client, runs[2], **BOB))["state"] == "complete"
        with anyio.fail_after(5):  # the runs gave their places back as they ended
            while True:
                again = await client.post(
                    f"/v1/sessions/{sessions[2]}/turns",
                    json={"message": "pay 5", "background": True},
                    headers=ALICE,
                )
                if again.status_code != 429:
                    break
                await anyio.sleep(0.02)
        assert again.status_code == 202, again.text
