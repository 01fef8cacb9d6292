"""Queued messages across two real ``symfonic serve`` processes, one killed with ``kill -9``.

A turn runs on worker A while three messages are queued behind it. When it
ends, A takes the first queued message and is killed while that message's tool
runs. The message's run reads ``failed`` once its lease lapses; worker B's
sweep then finds the session's hold lapsed, takes the second message, and, when
that one ends, the third. Each message ran once, in order, and the history holds
the turns that published.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from serve_support import ALICE, serving

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LEASE = 3.0

AGENT = """\
import os
from pathlib import Path

import anyio
from langchain_core.messages import HumanMessage, ToolMessage

from symfonic import SymfonicAgent
from symfonic.core.messages import text_of
from symfonic.testing import ScriptedChatModel, call, reply

CALLS = Path(os.environ["QUEUE_TEST_CALLS"])
RELEASE = Path(os.environ["QUEUE_TEST_RELEASE"])


async def work(note: str) -> str:
    \"\"\"Work on a note: "stall" never ends, "hold" waits for the release file.\"\"\"
    with CALLS.open("a") as calls:
        calls.write(f"{note}|{os.getpid()}\\n")
    if note.startswith("stall"):
        await anyio.sleep(3600)
    while note.startswith("hold") and not RELEASE.exists():
        await anyio.sleep(0.02)
    return f"worked on {note}"


def respond(messages):
    start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    answered = [m for m in messages[start:] if isinstance(m, ToolMessage)]
    if answered:
        return reply(f"done: {text_of(answered[-1])}")
    return call("work", {"note": text_of(messages[start])})


agent = SymfonicAgent(
    model=ScriptedChatModel(respond=respond),
    tools=[work],
    run_lease=float(os.environ["QUEUE_TEST_RUN_LEASE"]),
)
"""


def noted(calls: Path) -> list[tuple[str, int]]:
    lines = calls.read_text().splitlines() if calls.exists() else []
    return [(note, int(pid)) for note, _, pid in (line.partition("|") for line in lines)]


async def until_noted(calls: Path, count: int) -> list[tuple[str, int]]:
    with anyio.fail_after(10):
        while True:
            if len(seen := noted(calls)) >= count:
                return seen
            await anyio.sleep(0.02)


async def ended(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    with anyio.fail_after(20):
        while True:
            run = (await client.get(f"/v1/runs/{run_id}")).json()
            if run["state"] not in {"queued", "running"}:
                return dict(run)
            await anyio.sleep(0.05)


async def test_queued_messages_run_in_order_once_each_when_a_worker_is_killed(
    store_url: str, tmp_path: Path
) -> None:
    calls, release = tmp_path / "calls.txt", tmp_path / "release"
    (tmp_path / "queue_agents.py").write_text(AGENT)
    env = {
        **os.environ,
        "QUEUE_TEST_CALLS": str(calls),
        "QUEUE_TEST_RELEASE": str(release),
        "QUEUE_TEST_RUN_LEASE": str(LEASE),
    }
    options = ("queue_agents:agent", "--sweep-interval", "0.25")
    with (
        serving(store_url, tmp_path / "a.log", *options, env=env, cwd=tmp_path) as a,
        serving(store_url, tmp_path / "b.log", *options, env=env, cwd=tmp_path) as b,
    ):
        async with (
            httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=10) as on_a,
            httpx.AsyncClient(base_url=b.url, headers=ALICE, timeout=10) as on_b,
        ):
            session_id = (await on_a.post("/v1/sessions", json={})).json()["session_id"]
            turns = f"/v1/sessions/{session_id}/turns"
            first = await on_a.post(turns, json={"message": "hold first", "background": True})
            assert first.status_code == 202, first.text
            await until_noted(calls, 1)
            runs = []
            for message in ("stall one", "work two", "work three"):
                sent = await on_b.post(turns, json={"message": message, "on_busy": "enqueue"})
                assert sent.status_code == 202, sent.text
                runs.append(sent.json()["run_id"])
            for run_id in runs:
                assert (await on_b.get(f"/v1/runs/{run_id}")).json()["state"] == "queued"
            release.touch()
            assert (await until_noted(calls, 2))[1] == ("stall one", a.process.pid)
            a.process.kill()  # SIGKILL: no cleanup, no goodbye
            a.process.wait()
            outcomes = [await ended(on_b, run_id) for run_id in runs]
            assert (await ended(on_b, first.json()["run_id"]))["state"] == "complete"
            session = (await on_b.get(f"/v1/sessions/{session_id}")).json()
    assert [o["state"] for o in outcomes] == ["failed", "complete", "complete"]
    assert [o["outcome"]["answer"] for o in outcomes[1:]] == [
        "done: worked on work two",
        "done: worked on work three",
    ]
    assert noted(calls) == [
        ("hold first", a.process.pid),
        ("stall one", a.process.pid),
        ("work two", b.process.pid),
        ("work three", b.process.pid),
    ]
    said = [m["content"] for m in session["messages"] if m["role"] == "human"]
    assert said == ["hold first", "work two", "work three"]
