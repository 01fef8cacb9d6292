"""A cancel sent to one ``symfonic serve`` process stops the run another one runs.

Two real worker processes on one PostgreSQL database share nothing else. A
background turn (or resume) runs a tool that would take an hour on worker A;
the cancel goes to worker B. Within a second A's tool is cancelled (it says so
on A's output), nothing is published, the run reads ``cancelled`` on either
worker, and a resumed turn's pause is ``abandoned``: its token answers 410.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from http_support import frames
from serve_support import ALICE, Server, serving

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TESTS = Path(__file__).parent.parent
WORK = {"SYMFONIC_TEST_ANNOUNCE_WORK": "1", "SYMFONIC_TEST_WORK_SECONDS": "3600"}


@contextmanager
def two_workers(store: str, logs: Path) -> Iterator[tuple[Server, Server]]:
    """Workers A and B serving the workers' agent (``busy ...`` runs an hour-long tool)."""
    env = {**os.environ, **WORK}
    with ExitStack() as stack:
        a, b = (
            stack.enter_context(
                serving(store, logs / f"{name}.log", "workers.agents:served_agent",
                        env=env, cwd=TESTS)
            )
            for name in "ab"
        )
        yield a, b


def said(server: Server, what: str) -> list[str]:
    """The notes of the worker's ``{what: note}`` lines (its tools announce themselves)."""
    notes = []
    for line in server.output().splitlines():
        if line.startswith("{"):
            notes += [json.loads(line)[what]] if what in json.loads(line) else []
    return notes


async def when_said(server: Server, what: str, note: str, within: float) -> None:
    with anyio.fail_after(within):
        while True:  # another process's output: nothing here to wait on but the file
            if note in said(server, what):
                return
            await anyio.sleep(0.01)


async def until_kept(client: httpx.AsyncClient, run_id: str, event: str) -> None:
    """Follow the run until ``event`` is among its kept events (what the cancel comes after)."""
    with anyio.fail_after(10):
        async with client.stream("GET", f"/v1/runs/{run_id}/events") as response:
            async for line in response.aiter_lines():
                if line == f"event: {event}":
                    return


async def kinds_of_events(client: httpx.AsyncClient, run_id: str) -> list[str]:
    response = await client.get(f"/v1/runs/{run_id}/events")
    assert response.status_code == 200, response.text
    return [frame.event for frame in frames(response.text)]


async def cancelled_on_b(a: Server, b: httpx.AsyncClient, run_id: str, note: str) -> float:
    """Cancel through B; how long until A's tool said it was cancelled."""
    sent = time.monotonic()
    cancel = await b.post(f"/v1/runs/{run_id}/cancel")
    assert cancel.status_code == 202, cancel.text
    assert cancel.json()["state"] == "cancelled"
    await when_said(a, "cancelled", note, within=5)
    return time.monotonic() - sent


async def test_a_cancel_through_worker_b_stops_a_turn_running_on_worker_a(
    postgres_url: str, tmp_path: Path
) -> None:
    note = "busy with the quarterly report"
    with two_workers(postgres_url, tmp_path) as (a, b):
        async with (
            httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=10) as on_a,
            httpx.AsyncClient(base_url=b.url, headers=ALICE, timeout=10) as on_b,
        ):
            session_id = (await on_a.post("/v1/sessions", json={})).json()["session_id"]
            turn = await on_a.post(
                f"/v1/sessions/{session_id}/turns", json={"message": note, "background": True}
            )
            assert turn.status_code == 202, turn.text
            run_id = turn.json()["run_id"]
            await when_said(a, "started", note, within=10)
            await until_kept(on_b, run_id, "tool.call")
            assert await cancelled_on_b(a, on_b, run_id, note) < 1.0
            for client in (on_a, on_b):
                assert (await client.get(f"/v1/runs/{run_id}")).json()["state"] == "cancelled"
            kinds = await kinds_of_events(on_b, run_id)
            assert kinds == ["turn.started", "tool.call", "error"]
            session = (await on_b.get(f"/v1/sessions/{session_id}")).json()
            assert (session["revision"], session["status"], session["messages"]) == (0, "idle", [])


async def test_a_cancel_through_worker_b_abandons_the_pause_of_a_resume_on_worker_a(
    postgres_url: str, tmp_path: Path
) -> None:
    note = "work on the quarterly report"
    with two_workers(postgres_url, tmp_path) as (a, b):
        async with (
            httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=10) as on_a,
            httpx.AsyncClient(base_url=b.url, headers=ALICE, timeout=10) as on_b,
        ):
            session_id = (await on_a.post("/v1/sessions", json={})).json()["session_id"]
            paused = await on_a.post(
                f"/v1/sessions/{session_id}/turns",
                json={"message": note},
                headers={"Accept": "application/json"},
            )
            assert paused.json()["status"] == "paused", paused.text
            pause = paused.json()["pause"]
            body = {"token": pause["token"], "answer": {"decision": "approve"}}
            resume = await on_a.post("/v1/resume", json={**body, "background": True})
            assert resume.status_code == 202, resume.text
            run_id = resume.json()["run_id"]
            await when_said(a, "started", note, within=10)
            assert await cancelled_on_b(a, on_b, run_id, note) < 1.0
            assert (await on_a.get(f"/v1/runs/{run_id}")).json()["state"] == "cancelled"
            again = await on_b.post("/v1/resume", json=body)
            assert again.status_code == 410, again.text
            assert again.json()["error"]["code"] == "pause_abandoned"
            session = (await on_b.get(f"/v1/sessions/{session_id}")).json()
            assert (session["revision"], session["status"]) == (paused.json()["revision"], "idle")
            assert "worked on" not in json.dumps(session["messages"])
