"""Background runs through ``AsyncSymfonicClient``, against the real app under uvicorn.

What a program relies on: a run started in the background goes on with nobody
listening, its events replay afterwards as the turn stream's own typed events
and end with its terminal one, a dropped stream comes back with
``Last-Event-ID`` and loses nothing, a cancel stops a running turn and is
refused once it ended, and another principal's run does not exist for them.
"""

from __future__ import annotations

from contextlib import aclosing

import anyio
import pytest

from http_support import Gate, payment_agent
from symfonic.client import ApiError, AsyncSymfonicClient, RunStarted
from symfonic.core.contracts.run_events import RunState
from symfonic.core.contracts.types import (
    ErrorEvent,
    Event,
    ResponseCompleteEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnPausedEvent,
    TurnStartedEvent,
)
from test_async_client import APPROVE, CutOnce, served

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def events_of(client: AsyncSymfonicClient, run_id: str) -> list[Event]:
    with anyio.fail_after(10):
        return [event async for event in client.run_events(run_id)]


async def test_a_background_turn_and_resume_replay_their_events_and_end(store_url: str) -> None:
    async with served(payment_agent(store_url)) as (client, _):
        started = await client.start("pay 5")
        events = await events_of(client, started.run_id)
        paused_run = await client.get_run(started.run_id)  # its stream ended: so did the run
        assert paused_run.state is RunState.PAUSED and paused_run.outcome is not None
        assert [type(e) for e in events] == [TurnStartedEvent, ToolCallEvent, TurnPausedEvent]
        first, paused = events[0], events[-1]
        assert isinstance(first, TurnStartedEvent) and first.run_id == started.run_id
        assert isinstance(paused, TurnPausedEvent) and paused.pause_token
        assert paused_run.outcome.pause_id == paused.pause_id

        resumed = await client.start_resume(paused.pause_token, APPROVE)
        assert isinstance(resumed, RunStarted)
        assert resumed.events_url.endswith(f"/{resumed.run_id}/events")
        events = await events_of(client, resumed.run_id)
        done = events[-1]
        assert isinstance(done, ResponseCompleteEvent) and not isinstance(done, ErrorEvent)
        assert done.answer == "Paid."
        assert any(isinstance(e, ToolResultEvent) and e.content == "paid 5" for e in events)
        run = await client.get_run(resumed.run_id)
        assert run.state is RunState.COMPLETE and run.session_id == first.session_id
        assert run.outcome is not None and run.outcome.answer == "Paid."


async def test_a_dropped_run_stream_reconnects_and_gets_each_event_once(sqlite_url: str) -> None:
    gate = Gate()

    async def release() -> None:
        gate.release.set()

    cut = CutOnce(release)
    agent = payment_agent(sqlite_url, tool=gate.pay, approval=())
    async with served(agent, transport=cut) as (client, _):
        started = await client.start("pay 5")
        followed = await events_of(client, started.run_id)
        assert len(cut.feed_requests) == 2 and cut.feed_requests[0] is None
        assert cut.feed_requests[1] is not None  # the id of the last frame read
        # Exactly the run's events, in order, as a fresh replay from the start gives them.
        assert followed == await events_of(client, started.run_id)
        assert isinstance(followed[-1], ResponseCompleteEvent)
    assert gate.calls == [5]


async def test_a_cancel_stops_a_running_turn_and_is_refused_once_it_ended(
    sqlite_url: str,
) -> None:
    gate = Gate()
    async with served(payment_agent(sqlite_url, tool=gate.pay, approval=())) as (client, _):
        started = await client.start("pay 5")
        with anyio.fail_after(5):
            await gate.entered.wait()
        cancelled = await client.cancel_run(started.run_id)
        assert cancelled.state is RunState.CANCELLED
        with anyio.fail_after(2):
            await gate.cancelled.wait()
        *_, last = await events_of(client, started.run_id)
        assert isinstance(last, ErrorEvent) and last.code == "run_cancelled"
        with pytest.raises(ApiError) as refused:
            await client.cancel_run(started.run_id)
        assert (refused.value.status, refused.value.code) == (409, "run_not_running")
        assert refused.value.message
    assert gate.calls == []


async def test_another_principals_run_is_not_found(sqlite_url: str) -> None:
    async with served(payment_agent(sqlite_url)) as (client, http):
        started = await client.start("pay 5")
        async with AsyncSymfonicClient(str(http.base_url), api_key="key-bob") as bob:
            for refused_call in (bob.get_run, bob.cancel_run):
                with pytest.raises(ApiError) as refused:
                    await refused_call(started.run_id)
                assert (refused.value.status, refused.value.code) == (404, "run_not_found")
            with pytest.raises(ApiError) as refused:
                async with aclosing(bob.run_events(started.run_id)) as events:
                    await anext(events)
            assert (refused.value.status, refused.value.code) == (404, "run_not_found")
        await events_of(client, started.run_id)
        assert (await client.get_run(started.run_id)).state is RunState.PAUSED
