"""SIGTERM to one of two ``symfonic serve`` workers on PostgreSQL loses nothing.

Readiness answers 503 before the listener closes; a run's follower is closed at once (it
reconnects elsewhere). A turn that ends within ``--grace`` completes; a turn and a resume
that do not are cancelled, publishing nothing, the resume's pause abandoned and refused as
such on the other worker. A background run finishes within the grace; a queued message the
stopping worker would have taken next, and a webhook delivery it was sending, are taken up
by the other worker at once, each run once. The worker exits 0 with one line saying so; a
second SIGTERM stops it at once.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from http_support import JSON
from serve_support import ALICE, Server, serving
from webhook_support import SECRET, Receiver, receiving

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.postgres]

AGENT = """\
import os
from pathlib import Path

import anyio
from langchain_core.messages import HumanMessage, ToolMessage

from symfonic import SymfonicAgent
from symfonic.core.messages import text_of
from symfonic.testing import ScriptedChatModel, call, reply

CALLS = Path(os.environ["STOP_TEST_CALLS"])


def _note(what, note):
    with CALLS.open("a") as calls:
        calls.write(f"{what}|{note}|{os.getpid()}\\n")


async def work(note: str) -> str:
    \"\"\"Work for as many seconds as the note ends with.\"\"\"
    _note("started", note)
    try:
        await anyio.sleep(float(note.rsplit(" ", 1)[-1]))
    except anyio.get_cancelled_exc_class():
        _note("cancelled", note)
        raise
    return f"worked on {note}"


async def approved_work(note: str) -> str:
    \"\"\"The same work, once a person approves it.\"\"\"
    return await work(note)


class Thinking(ScriptedChatModel):
    \"\"\"Thinks as many seconds as a "think S N" message says before it answers.\"\"\"

    async def _astream(self, messages, *args, **kwargs):
        asked = text_of([m for m in messages if isinstance(m, HumanMessage)][-1])
        if asked.startswith("think") and not isinstance(messages[-1], ToolMessage):
            _note("thinking", asked)
            await anyio.sleep(float(asked.split()[1]))
        async for chunk in super()._astream(messages, *args, **kwargs):
            yield chunk


def respond(messages):
    start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    answered = [m for m in messages[start:] if isinstance(m, ToolMessage)]
    if answered:
        return reply(f"done: {text_of(answered[-1])}")
    asked = text_of(messages[start])
    return call("approved_work" if asked.startswith("ask") else "work", {"note": asked})


agent = SymfonicAgent(
    model=Thinking(respond=respond),
    tools=[work, approved_work],
    approval={"approved_work"},
)
"""


@contextmanager
def worker(tmp_path: Path, store: str, name: str, *options: str) -> Iterator[Server]:
    (tmp_path / "stop_agents.py").write_text(AGENT)
    env = {
        **os.environ,
        "STOP_TEST_CALLS": str(tmp_path / "calls.txt"),
        "SYMFONIC_WEBHOOK_SECRET": SECRET,
    }
    log = tmp_path / f"{name}.log"
    with serving(store, log, "stop_agents:agent", *options, env=env, cwd=tmp_path) as server:
        yield server


def noted(tmp_path: Path) -> list[tuple[str, str, int]]:
    calls = tmp_path / "calls.txt"
    lines = calls.read_text().splitlines() if calls.exists() else []
    return [(what, note, int(pid)) for what, note, pid in (line.split("|") for line in lines)]


async def until_started(tmp_path: Path, *notes: str, what: str = "started") -> None:
    with anyio.fail_after(10):
        while True:  # another process's file: nothing to wait on but it
            if set(notes) <= {note for seen, note, _ in noted(tmp_path) if seen == what}:
                return
            await anyio.sleep(0.02)


async def exited(server: Server, within: float) -> int:
    with anyio.fail_after(within):
        while True:
            if (code := server.process.poll()) is not None:
                return code
            await anyio.sleep(0.02)


async def streamed(
    client: httpx.AsyncClient, path: str, body: dict[str, Any] | None = None
) -> list[str]:
    """The event types of a streamed turn or resume (a run's, without a body), as far as
    its stream went."""
    seen: list[str] = []
    try:
        async with client.stream("GET" if body is None else "POST", path, json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    seen.append(line.removeprefix("event: "))
    except httpx.TransportError:
        seen.append("cut")
    return seen


async def readiness_until_refused(url: str, seen: list[int | str]) -> None:
    """Readiness on a new connection every 20 ms, until connections are refused."""
    while True:
        try:
            async with httpx.AsyncClient() as client:
                seen.append((await client.get(f"{url}/v1/health/ready", timeout=2)).status_code)
        except httpx.TransportError:
            seen.append("refused")
            return
        await anyio.sleep(0.02)


async def session(client: httpx.AsyncClient) -> str:
    return str((await client.post("/v1/sessions", json={})).json()["session_id"])


async def test_a_turn_within_the_grace_completes_and_work_beyond_it_is_cancelled(
    postgres_url: str, tmp_path: Path
) -> None:
    with (
        worker(tmp_path, postgres_url, "a", "--grace", "3") as a,
        worker(tmp_path, postgres_url, "b", "--grace", "1") as b,
    ):
        async with (
            httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=30) as on_a,
            httpx.AsyncClient(base_url=b.url, headers=ALICE, timeout=30) as on_b,
        ):
            assert (await on_a.get("/v1/health/ready")).json() == {"status": "ok"}
            assert (await on_a.get("/v1/health/live")).json() == {"status": "ok"}
            quick, slow, asked = await session(on_a), await session(on_a), await session(on_a)
            paused = await on_a.post(
                f"/v1/sessions/{asked}/turns", json={"message": "ask 60"}, headers=JSON
            )
            body = {"token": paused.json()["pause"]["token"], "answer": {"decision": "approve"}}
            elsewhere = await on_b.post(
                f"/v1/sessions/{await session(on_b)}/turns",
                json={"message": "f 60", "background": True},
            )
            readiness: list[int | str] = []
            outcomes: dict[str, list[str]] = {}
            ended: dict[str, float] = {}

            async def run(name: str, path: str, sent: dict[str, Any] | None = None) -> None:
                outcomes[name] = await streamed(on_a, path, sent)
                ended[name] = time.monotonic()

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(run, "quick", f"/v1/sessions/{quick}/turns", {"message": "w 2"})
                tasks.start_soon(run, "slow", f"/v1/sessions/{slow}/turns", {"message": "w 60"})
                tasks.start_soon(run, "resume", "/v1/resume", body)
                tasks.start_soon(run, "follower", f"/v1/runs/{elsewhere.json()['run_id']}/events")
                await until_started(tmp_path, "w 2", "w 60", "ask 60", "f 60")
                await anyio.sleep(0.2)  # the follower is following
                a.process.send_signal(signal.SIGTERM)
                stopped_at = time.monotonic()
                tasks.start_soon(readiness_until_refused, a.url, readiness)
            code = await exited(a, within=10)
            took = time.monotonic() - stopped_at
            again = await on_b.post("/v1/resume", json=body)
            sessions = [(await on_b.get(f"/v1/sessions/{s}")).json() for s in (quick, slow)]
            # The cancelled turn's hold on its session went with it: B takes a turn at once.
            next_turn = await on_b.post(
                f"/v1/sessions/{slow}/turns", json={"message": "w 0"}, headers=JSON
            )
    assert outcomes["quick"][-1] == "response.complete"
    assert outcomes["follower"][-1] == "cut" and ended["follower"] - stopped_at < 2.5
    assert "response.complete" not in outcomes["slow"] + outcomes["resume"]
    assert ("cancelled", "w 60", a.process.pid) in noted(tmp_path)
    assert ("cancelled", "ask 60", a.process.pid) in noted(tmp_path)
    assert [s["revision"] for s in sessions] == [1, 0]  # the slow turn published nothing
    assert next_turn.json()["status"] == "complete", next_turn.text
    assert (again.status_code, again.json()["error"]["code"]) == (410, "pause_abandoned")
    assert readiness[-1] == "refused" and 503 in readiness
    assert 200 not in readiness[readiness.index(503) :]
    assert code == 0 and 2.5 < took < 8.0
    assert re.search(
        r"stopped: \d+ requests? and 0 background runs finished, 2 and 0 cancelled after "
        r"the 3 s grace",
        a.output(),
    ), a.output()


async def test_background_work_queued_messages_and_webhooks_are_left_to_the_other_worker(
    postgres_url: str, tmp_path: Path
) -> None:
    with receiving() as receiver:
        receiver.hold = 120.0  # the first attempt stays open until A lets it go
        # A 60 s timeout (a 120 s lease): only A's stop lets the attempt go in time.
        hook = ("--webhook", receiver.url, "--webhook-event", "pause.created")
        hook += ("--webhook-timeout", "60")
        with worker(tmp_path, postgres_url, "a", "--grace", "10", *hook) as a:
            async with httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=30) as on_a:
                asked = await session(on_a)
                await on_a.post(f"/v1/sessions/{asked}/turns", json={"message": "ask 1"})
                await receiver.wait_for(1, within=5)
                receiver.hold = 0.0
                # B sweeps every 3 s: it takes a free queue at once only when handed it.
                with worker(tmp_path, postgres_url, "b", "--sweep-interval", "3", *hook) as b:
                    await handed_over(tmp_path, a, b, receiver)


async def handed_over(tmp_path: Path, a: Server, b: Server, receiver: Receiver) -> None:
    async with (
        httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=30) as on_a,
        httpx.AsyncClient(base_url=b.url, headers=ALICE, timeout=30) as on_b,
    ):
        attached, background = await session(on_a), await session(on_a)
        turns = f"/v1/sessions/{attached}/turns"
        ran = await on_a.post(
            f"/v1/sessions/{background}/turns", json={"message": "bg 3", "background": True}
        )
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(streamed, on_a, turns, {"message": "w 3"})
            await until_started(tmp_path, "w 3", "bg 3")
            queued = await on_b.post(turns, json={"message": "q 0", "on_busy": "enqueue"})
            a.process.send_signal(signal.SIGTERM)
        assert await exited(a, within=10) == 0
        left_at = time.monotonic()
        await receiver.wait_for(2, within=10)
        with anyio.fail_after(3 + 10):  # one of B's sweeps, and the turn
            while True:
                run = (await on_b.get(f"/v1/runs/{queued.json()['run_id']}")).json()
                if run["state"] not in {"queued", "running"}:
                    break
                await anyio.sleep(0.05)
        took = time.monotonic() - left_at
        background_run = (await on_b.get(f"/v1/runs/{ran.json()['run_id']}")).json()
    assert run["state"] == "complete" and took < 3 + 10
    assert [(w, pid) for w, note, pid in noted(tmp_path) if note == "q 0"] == [
        ("started", b.process.pid)
    ]
    assert background_run["state"] == "complete"
    held, sent = receiver.received[:2]
    assert held.id == sent.id and len(receiver.received) == 2
    assert re.search(
        r"stopped: \d+ requests? and 1 background run finished, 0 and 0 cancelled after the "
        r"10 s grace; handed 0 background runs, 1 queued message and 1 webhook delivery to "
        r"the other workers",
        a.output(),
    ), a.output()


async def test_a_background_run_whose_model_has_not_answered_is_run_once_by_the_other_worker(
    postgres_url: str, tmp_path: Path
) -> None:
    with (
        worker(tmp_path, postgres_url, "a", "--grace", "1") as a,
        worker(tmp_path, postgres_url, "b", "--sweep-interval", "1") as b,
    ):
        async with (
            httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=30) as on_a,
            httpx.AsyncClient(base_url=b.url, headers=ALICE, timeout=30) as on_b,
        ):
            ran = await on_a.post(
                f"/v1/sessions/{await session(on_a)}/turns",
                json={"message": "think 4 0", "background": True},
            )
            run_id = ran.json()["run_id"]
            await until_started(tmp_path, "think 4 0", what="thinking")
            a.process.send_signal(signal.SIGTERM)
            assert await exited(a, within=10) == 0
            left_at = time.monotonic()
            with anyio.fail_after(10):
                while True:  # until B thinks too
                    if [n for n in noted(tmp_path) if n[:2] == ("thinking", "think 4 0")][1:]:
                        break
                    await anyio.sleep(0.02)
            took = time.monotonic() - left_at
            with anyio.fail_after(15):
                while True:
                    run = (await on_b.get(f"/v1/runs/{run_id}")).json()
                    if run["state"] not in {"queued", "running"}:
                        break
                    await anyio.sleep(0.05)
            events = await streamed(on_b, f"/v1/runs/{run_id}/events")
    assert [(w, pid) for w, note, pid in noted(tmp_path) if note == "think 4 0"] == [
        ("thinking", a.process.pid),
        ("thinking", b.process.pid),
        ("started", b.process.pid),  # the tool, once
    ]
    assert took < 1 + 2  # one of B's 1 s sweeps
    assert run["state"] == "complete", run
    assert events[0] == "turn.started" and events.count("turn.started") == 1, events
    assert events[-1] == "response.complete" and "error" not in events, events
    assert re.search(r"0 and 0 cancelled after the 1 s grace; handed 1 background run,", a.output())


async def test_a_second_sigterm_stops_at_once(postgres_url: str, tmp_path: Path) -> None:
    with worker(tmp_path, postgres_url, "a", "--grace", "60") as a:
        async with httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=30) as on_a:
            turns = f"/v1/sessions/{await session(on_a)}/turns"
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(streamed, on_a, turns, {"message": "w 60"})
                await until_started(tmp_path, "w 60")
                a.process.send_signal(signal.SIGTERM)
                await anyio.sleep(1.5)  # draining: the turn has most of its grace left
                assert a.process.poll() is None
                a.process.send_signal(signal.SIGTERM)
                again = time.monotonic()
                code = await exited(a, within=5)
                took = time.monotonic() - again
    assert code == 128 + signal.SIGTERM and took < 1.0
    assert "stopped at once on a second signal" in a.output()
