"""A turn streamed in two tabs, one on each worker, and cancelled while both stream.

On PostgreSQL with two ``symfonic serve`` workers: alice's AG-UI run on worker A
starts a turn whose tool waits; her second tab, on worker B, joins it. She
cancels the run from B while both stream: the tool is cancelled once and never
ends, both tabs end with the same ``RUN_ERROR``, nothing is kept or published
after the cancel, and her next message on the thread runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from ag_ui.core import RunErrorEvent, RunFinishedEvent, RunStartedEvent

from agui_support import AguiReader, run_body
from http_support import frames
from serve_support import ALICE, serving

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.postgres]

TESTS = Path(__file__).resolve().parent.parent


async def _ended(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    with anyio.fail_after(10):
        while True:
            run = (await client.get(f"/v1/runs/{run_id}")).json()
            if run["state"] != "running":
                return dict(run)
            await anyio.sleep(0.05)


async def test_a_cancel_while_two_tabs_stream_ends_both_alike_and_frees_the_thread(
    postgres_url: str, tmp_path: Path
) -> None:
    gate, trail = tmp_path / "gate", tmp_path / "trail"
    env = {**os.environ, "PYTHONPATH": str(TESTS), "SYMFONIC_TEST_GATE": str(gate),
           "SYMFONIC_TEST_TRAIL": str(trail)}
    agent = "gated_agent:agent"
    with (
        serving(postgres_url, tmp_path / "a.log", agent, env=env) as a,
        serving(postgres_url, tmp_path / "b.log", agent, env=env) as b,
    ):
        async with (
            httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=20) as on_a,
            httpx.AsyncClient(base_url=b.url, headers=ALICE, timeout=20) as on_b,
            on_a.stream("POST", "/v1/agui", json=run_body("t-tabs", "tidy")) as first,
        ):
            tab1 = AguiReader(first)
            started = await tab1.next()
            await tab1.until("TOOL_CALL_END")  # the tool runs, and waits for the gate
            assert isinstance(started, RunStartedEvent) and started.metadata is not None
            run_id = started.metadata["symfonic"]["runId"]
            async with on_b.stream("POST", "/v1/agui", json=run_body("t-tabs")) as second:
                tab2 = AguiReader(second)
                await tab2.until("TOOL_CALL_END")
                cancel = await on_b.post(f"/v1/runs/{run_id}/cancel")
                assert cancel.status_code == 202, cancel.text
                ends = [(await tab.rest())[-1] for tab in (tab1, tab2)]
            gate.touch()  # a tool that was not stopped would end now
            run = await _ended(on_a, run_id)
            await anyio.sleep(1)
            kept = frames((await on_a.get(f"/v1/runs/{run_id}/events")).text)
            session = (await on_a.get("/v1/sessions/t-tabs")).json()
            again = AguiReader(await on_a.post("/v1/agui", json=run_body("t-tabs", "again")))
            after = await again.rest()

    assert all(isinstance(end, RunErrorEvent) for end in ends), ends
    assert [(e.code, e.message) for e in ends if isinstance(e, RunErrorEvent)] == [
        (ends[0].code, ends[0].message)
    ] * 2
    assert ends[0].code == "run_cancelled"
    assert run["state"] == "cancelled"
    assert [f.event for f in kept][-1] == "error" and kept[-1].data["code"] == "run_cancelled"
    assert [f.event for f in kept].count("error") == 1
    assert session["revision"] == 0
    assert trail.read_text().splitlines() == [
        "started tidy", "cancelled tidy", "started again", "ended again"
    ]
    assert isinstance(after[-1], RunFinishedEvent), after
    assert not (after[0].metadata or {}).get("symfonic", {}).get("joined")
