"""An AG-UI run joins its thread's turn in progress, across two ``symfonic serve`` workers.

Both workers serve the same store (SQLite, and PostgreSQL). Alice's run on
worker A starts a turn whose step waits for the test; her page then goes away
mid-turn (the connection closed). A run for the same thread on worker B, as
her reloaded page sends it (no messages), joins the turn instead of failing:
it gets the thread's messages, the events the turn already had, and then, once
the step is let go, the rest of them live, each once, to ``RUN_FINISHED``.
The turn her first page started was not stopped by its going: it ran to its
end once. Carol, another principal, cannot join: her run on the thread gets
what anyone gets for someone else's thread.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from ag_ui.core import (
    MessagesSnapshotEvent,
    RunFinishedEvent,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from agui_support import AguiReader, run_body, types
from serve_support import ALICE, serving

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TESTS = Path(__file__).resolve().parent.parent
CAROL = {"Authorization": "Bearer carol-secret-key"}


def text_of(events: list[Any]) -> str:
    return "".join(e.delta for e in events if isinstance(e, TextMessageContentEvent))


async def test_a_second_agui_run_on_another_worker_joins_the_running_turn(
    store_url: str, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    env = {**os.environ, "PYTHONPATH": str(TESTS), "SYMFONIC_TEST_GATE": str(gate)}
    agent = "gated_agent:agent"
    with (
        serving(store_url, tmp_path / "a.log", agent, env=env) as a,
        serving(store_url, tmp_path / "b.log", agent, env=env) as b,
    ):
        async with (
            httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=20) as on_a,
            httpx.AsyncClient(base_url=b.url, headers=ALICE, timeout=20) as on_b,
        ):
            first = run_body("t-joined", "tidy the ledger")
            async with on_a.stream("POST", "/v1/agui", json=first) as response:
                assert response.status_code == 200
                page = AguiReader(response)
                started = await page.next()
                await page.until("TOOL_CALL_END")  # the step runs, and waits for the gate
            # The first page is gone, mid-turn.
            assert isinstance(started, RunStartedEvent) and started.metadata is not None
            run_id = started.metadata["symfonic"]["runId"]
            assert (await on_b.get(f"/v1/runs/{run_id}")).json()["state"] == "running"

            theirs = await on_b.post("/v1/agui", json=run_body("t-joined", "me too"), headers=CAROL)
            lines = theirs.text.splitlines()
            [refused] = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
            assert refused["type"] == "RUN_ERROR" and refused["code"] == "thread_not_found"

            reload = run_body("t-joined")
            async with on_b.stream("POST", "/v1/agui", json=reload) as response:
                assert response.status_code == 200
                joined = AguiReader(response)
                await joined.until("TOOL_CALL_END")  # what the turn had done so far
                gate.touch()
                events = await joined.rest(wait=20)

            with anyio.fail_after(10):
                while True:  # the run ends a moment after its last event
                    run = (await on_a.get(f"/v1/runs/{run_id}")).json()
                    if run["state"] != "running":
                        break
                    await anyio.sleep(0.05)
            session = (await on_a.get("/v1/sessions/t-joined")).json()

    opened = events[0]
    assert isinstance(opened, RunStartedEvent) and opened.metadata is not None
    assert opened.run_id == reload["runId"]  # the joined run is this request's own run
    assert opened.metadata["symfonic"]["joined"] is True
    assert opened.metadata["symfonic"]["runId"] == run_id
    assert isinstance(events[1], MessagesSnapshotEvent)  # the restored page's thread
    assert types(events).count("TOOL_CALL_START") == 1
    assert [e.tool_call_name for e in events if isinstance(e, ToolCallStartEvent)] == [
        "gated_step"
    ]
    [result] = [e for e in events if isinstance(e, ToolCallResultEvent)]
    assert result.content == "stepped on tidy the ledger"
    assert text_of(events) == "Starting the step now.finished after stepped on tidy the ledger"
    assert isinstance(events[-2], MessagesSnapshotEvent)
    finished = events[-1]
    assert isinstance(finished, RunFinishedEvent)
    assert finished.run_id == reload["runId"]
    assert isinstance(finished.outcome, RunFinishedSuccessOutcome)

    # The first page's going did not stop its turn: it ran to its end, once.
    assert run["state"] == "complete"
    assert session["revision"] == 1
    steps = [m for m in session["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in steps] == ["stepped on tidy the ledger"]
