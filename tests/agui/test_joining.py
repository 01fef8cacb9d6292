"""AG-UI runs whose turn outlives the request: a page that goes away, a second run that joins.

Under the app's lifespan (a real uvicorn here, on SQLite and PostgreSQL), an
AG-UI run's turn is a kept run: a page that goes away mid-turn leaves it
running (an approved step is carried out, its pause published, not
abandoned), and a second run for the thread while the turn runs (a reloaded
page, a second tab) joins it instead of being refused: it gets the turn's
events, each once and in order, and its own message is not run.
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest
from ag_ui.core import (
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    ToolCallResultEvent,
)

from agui_support import AguiReader, parse_stream, run_body, types
from http_support import (
    KEYS,
    Gate,
    auth,
    new_session,
    pause_row,
    payment_agent,
    uvicorn_serving,
)
from symfonic.core.contracts.types import PauseState
from symfonic.server.app import create_app

pytestmark = pytest.mark.anyio

ALICE = auth("alice")


def said(events: list[Any]) -> str:
    return "".join(e.delta for e in events if isinstance(e, TextMessageContentEvent))


async def test_a_second_run_while_the_turn_runs_joins_it_and_its_message_is_not_run(
    store_url: str,
) -> None:
    gate = Gate()
    agent = payment_agent(store_url, tool=gate.pay, approval=())
    app = create_app(agent, api_keys=KEYS, sweep_interval=0)
    thread = f"t-{uuid.uuid4().hex}"
    async with uvicorn_serving(app) as client:
        first_body = run_body(thread, "pay 5")
        async with client.stream("POST", "/v1/agui", json=first_body, headers=ALICE) as first:
            page = AguiReader(first)
            await page.until("TOOL_CALL_END")
            with anyio.fail_after(5):
                await gate.entered.wait()
            second_body = run_body(thread, "and pay bob 100")
            async with client.stream(
                "POST", "/v1/agui", json=second_body, headers=ALICE
            ) as second:
                tab = AguiReader(second)
                await tab.until("TOOL_CALL_END")
                gate.release.set()
                joined = await tab.rest()
            started = await page.rest()
        session = (await client.get(f"/v1/sessions/{thread}", headers=ALICE)).json()

    # The turn's frames as its own run showed them, then the thread's messages.
    assert types(joined)[1:-2] == types(started)[1:-1], (types(joined), types(started))
    assert types(joined)[-2] == "MESSAGES_SNAPSHOT"
    assert said(joined) == said(started) == "Paid."
    opened = joined[0]
    assert isinstance(opened, RunStartedEvent) and opened.metadata is not None
    assert opened.run_id == second_body["runId"]
    first_opened = started[0]
    assert isinstance(first_opened, RunStartedEvent) and first_opened.metadata is not None
    assert opened.metadata["symfonic"]["joined"] is True
    assert "joined" not in first_opened.metadata["symfonic"]
    assert opened.metadata["symfonic"]["runId"] == first_opened.metadata["symfonic"]["runId"]
    done = joined[-1]
    assert isinstance(done, RunFinishedEvent) and done.run_id == second_body["runId"]
    assert isinstance(done.outcome, RunFinishedSuccessOutcome)
    assert gate.calls == [5]
    assert session["revision"] == 1
    assert "bob" not in str(session["messages"])


async def test_an_approved_step_goes_on_when_the_page_goes_away(store_url: str) -> None:
    gate = Gate()
    agent = payment_agent(store_url, tool=gate.pay)
    app = create_app(agent, api_keys=KEYS, sweep_interval=0)
    thread = f"t-{uuid.uuid4().hex}"
    async with uvicorn_serving(app) as client:
        asked = await client.post("/v1/agui", json=run_body(thread, "pay 5"), headers=ALICE)
        outcome = parse_stream(asked.text)[-1].outcome  # type: ignore[attr-defined]
        assert isinstance(outcome, RunFinishedInterruptOutcome)
        [interrupt] = outcome.interrupts
        entry = {"interruptId": interrupt.id, "status": "resolved", "payload": {"approved": True}}
        body = run_body(thread, resume=[entry])
        async with client.stream("POST", "/v1/agui", json=body, headers=ALICE) as response:
            await AguiReader(response).until("RUN_STARTED")
            with anyio.fail_after(5):
                await gate.entered.wait()
        # The page is gone while the approved payment waits: the turn goes on, and
        # the reloaded page's run joins it.
        pause_id = interrupt.metadata["symfonic"]["pauseId"]  # type: ignore[index]
        assert (await pause_row(agent, pause_id)).state is PauseState.CLAIMED
        reload = run_body(thread)
        async with client.stream("POST", "/v1/agui", json=reload, headers=ALICE) as response:
            page = AguiReader(response)
            await page.until("MESSAGES_SNAPSHOT")  # the thread, as the reloaded page shows it
            gate.release.set()
            rejoined = await page.rest()
        with anyio.fail_after(5):
            while True:  # the turn settles its claim in another task
                if (await pause_row(agent, pause_id)).state is not PauseState.CLAIMED:
                    break
                await anyio.sleep(0.02)
        session = (await client.get(f"/v1/sessions/{thread}", headers=ALICE)).json()
        assert (await pause_row(agent, pause_id)).state is PauseState.PUBLISHED
    opened = rejoined[0]
    assert isinstance(opened, RunStartedEvent) and opened.metadata is not None
    assert opened.metadata["symfonic"]["joined"] is True
    assert opened.metadata["symfonic"]["resumed"] is True
    assert "TOOL_CALL_START" not in types(rejoined)  # the answered call was shown before
    [result] = [e for e in rejoined if isinstance(e, ToolCallResultEvent)]
    assert result.content == "paid 5"
    assert said(rejoined) == "Paid."
    finished = rejoined[-1]
    assert isinstance(finished, RunFinishedEvent) and finished.run_id == reload["runId"]
    assert isinstance(finished.outcome, RunFinishedSuccessOutcome)
    assert not gate.cancelled.is_set()
    assert gate.calls == [5]
    assert session["revision"] == 1


async def test_a_run_on_a_thread_busy_with_an_unkept_turn_is_still_refused(
    store_url: str,
) -> None:
    """A turn run inside its request (the native streamed turn) keeps no events to
    join: an AG-UI run meanwhile is refused as busy, as before."""
    gate = Gate()
    agent = payment_agent(store_url, tool=gate.pay, approval=())
    app = create_app(agent, api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as client:
        thread = await new_session(client, **ALICE)
        turn = {"message": "pay 5"}
        url = f"/v1/sessions/{thread}/turns"
        async with client.stream("POST", url, json=turn, headers=ALICE) as attached:
            assert attached.status_code == 200
            with anyio.fail_after(5):
                await gate.entered.wait()
            refused = await client.post("/v1/agui", json=run_body(thread, "again"), headers=ALICE)
            gate.release.set()
            await attached.aread()
    [event] = parse_stream(refused.text)
    assert event.type.value == "RUN_ERROR"
    assert event.code == "session_busy"  # type: ignore[attr-defined]
