"""How a follower of a run hears of its new events: from memory on the worker running it,
through the store's watch on another, where what was kept while the watch was being set up
still reaches it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import anyio
import pytest

from feed_support import FeedReader
from http_support import (
    KEYS,
    Frame,
    Gate,
    auth,
    client_of,
    frames,
    new_session,
    payment_agent,
    uvicorn_serving,
)
from symfonic import SymfonicAgent
from symfonic.server.app import create_app
from symfonic.server.service import runs
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio

ALICE = auth("alice")


async def slow_pay(amount: int) -> str:
    """Pay an amount."""
    await anyio.sleep(0.2)  # the follower is waiting when the run ends
    return f"paid {amount}"


async def test_what_was_kept_before_the_watch_listened_reaches_the_follower(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs, "RECHECK_SECONDS", 60.0)  # a missed event would wait this long
    agent = payment_agent(store_url, tool=slow_pay, approval=())
    app = create_app(agent, api_keys=KEYS, sweep_interval=0)
    async with app.router.lifespan_context(app), client_of(app) as client:
        store = app.state.symfonic.runs._host.store
        watch = store.watch_run_events

        async def listening_late() -> AsyncGenerator[list[str], None]:
            await anyio.sleep(0.6)  # a slow LISTEN: the run has ended by then
            async with aclosing(watch()) as batches:
                async for batch in batches:
                    yield batch

        monkeypatch.setattr(store, "watch_run_events", listening_late)
        session_id = await new_session(client, **ALICE)
        with anyio.fail_after(5):
            started = await client.post(
                f"/v1/sessions/{session_id}/turns",
                json={"message": "pay 5", "background": True},
                headers=ALICE,
            )
            assert started.status_code == 202, started.text
            followed = await client.get(started.json()["events_url"], headers=ALICE)
    assert [f.event for f in frames(followed.text)][-1] == "response.complete"


async def follow_to_the_end(reader: FeedReader) -> list[Frame]:
    seen = [await reader.next()]
    while seen[-1].event not in ("response.complete", "turn.paused", "error"):
        seen.append(await reader.next())
    return seen


async def test_a_follower_on_the_running_worker_reads_its_events_from_memory(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()
    agent = payment_agent(store_url, tool=gate.pay, approval=())
    app = create_app(agent, api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as client:
        session_id = await new_session(client, **ALICE)  # the app has opened its store
        reads: list[int] = []
        read = agent.store.run_events_after

        async def counted(run_id: str, position: int, *, limit: int) -> Any:
            reads.append(position)
            return await read(run_id, position, limit=limit)

        monkeypatch.setattr(agent.store, "run_events_after", counted)
        body = {"message": "pay 5", "background": True}
        started = await client.post(f"/v1/sessions/{session_id}/turns", json=body, headers=ALICE)
        url = started.json()["events_url"]
        async with client.stream("GET", url, headers=ALICE) as response:
            reader = FeedReader(response)
            first = [await reader.next(), await reader.next()]
            await gate.entered.wait()
            gate.release.set()
            live = first + await follow_to_the_end(reader)
        assert reads == []  # not one read of the store between the events
        replayed = frames((await client.get(url, headers=ALICE)).text)
    assert [(f.event, f.id) for f in live] == [
        ("turn.started", "1"),
        ("tool.call", "2"),
        ("tool.result", "3"),
        ("text.delta", "4"),
        ("response.complete", "5"),
    ]
    assert reads, "the replay once the run ended reads the store"
    assert [(f.event, f.id, f.data) for f in replayed] == [(f.event, f.id, f.data) for f in live]


async def ended_at(wait: float) -> str:
    """The time this tool ended, after ``wait`` seconds."""
    await anyio.sleep(wait)
    return f"{time.time():.6f}"


def ticking_agent(store_url: str, ticks: int) -> SymfonicAgent:
    def respond(messages: list[Any]) -> Any:
        done = sum(getattr(m, "type", "") == "tool" for m in messages) >= ticks
        return reply("done") if done else call("ended_at", {"wait": 0.05})

    return SymfonicAgent(
        model=ScriptedChatModel(respond=respond), tools=[ended_at], store=store_url
    )


async def test_a_follower_on_another_worker_hears_of_each_event_promptly(store_url: str) -> None:
    """A loose bound, for a loaded machine; the tight figures are bench/runs.py's."""
    workers = [
        create_app(ticking_agent(store_url, ticks=8), api_keys=KEYS, sweep_interval=0) for _ in "ab"
    ]
    async with uvicorn_serving(workers[0]) as a, uvicorn_serving(workers[1]) as b:
        session_id, _ = await new_session(a, **ALICE), await new_session(b, **ALICE)
        body = {"message": "tick", "background": True}
        started = await a.post(f"/v1/sessions/{session_id}/turns", json=body, headers=ALICE)
        waits: list[float] = []
        async with b.stream("GET", started.json()["events_url"], headers=ALICE) as response:
            reader = FeedReader(response)
            while (frame := await reader.next()).event != "response.complete":
                if frame.event == "tool.result":
                    waits.append(time.time() - float(frame.data["content"]))
    assert len(waits) == 8
    assert statistics.median(waits[1:]) < 0.1, waits  # the first may have been replayed


async def test_a_follower_on_the_running_worker_gets_the_cancel_that_ended_the_run(
    store_url: str,
) -> None:
    gate = Gate()
    app = create_app(payment_agent(store_url, tool=gate.pay, approval=()), api_keys=KEYS)
    async with uvicorn_serving(app) as client:
        session_id = await new_session(client, **ALICE)
        body = {"message": "pay 5", "background": True}
        started = await client.post(f"/v1/sessions/{session_id}/turns", json=body, headers=ALICE)
        run_id = started.json()["run_id"]
        async with client.stream("GET", f"/v1/runs/{run_id}/events", headers=ALICE) as response:
            reader = FeedReader(response)
            first = [await reader.next(), await reader.next()]
            await gate.entered.wait()
            cancelled = await client.post(f"/v1/runs/{run_id}/cancel", headers=ALICE)
            assert cancelled.status_code == 202, cancelled.text
            seen = first + await follow_to_the_end(reader)
    assert [(f.event, f.id) for f in seen] == [
        ("turn.started", "1"),
        ("tool.call", "2"),
        ("error", "3"),
    ]
    assert seen[-1].data["code"] == "run_cancelled"
    assert gate.calls == []
