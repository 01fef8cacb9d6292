"""A turn paused in one OS process is resumed by another that never saw it.

The two processes share nothing but the SQLite file: the resuming one builds its
agent from scratch, and its first call is the resume.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

WORKER = '''
import asyncio, json, os, sys

from langchain_core.messages import HumanMessage, ToolMessage

from symfonic import SymfonicAgent
from symfonic.testing import ScriptedChatModel, calls, reply


def respond(messages):
    if isinstance(messages[-1], HumanMessage):
        return calls(
            ("lookup", {"name": "bob"}, "look"),
            ("send_payment", {"amount": 5, "to": "bob"}, "pay"),
        )
    seen = {m.tool_call_id: m.content for m in messages if isinstance(m, ToolMessage)}
    return reply(f"pay={seen['pay']}; look={seen['look']}")


def lookup(name: str) -> str:
    """Look a contact up."""
    print(json.dumps({"ran": "lookup", "pid": os.getpid()}), file=sys.stderr)
    return name


def send_payment(amount: int, to: str, idempotency_key: str) -> str:
    """Send money."""
    print(json.dumps({"ran": "send_payment", "pid": os.getpid()}), file=sys.stderr)
    return f"sent {amount} to {to} ({idempotency_key[:8]})"


def agent():
    return SymfonicAgent(
        model=ScriptedChatModel(respond=respond), tools=[lookup, send_payment],
        approval={"send_payment"}, store=os.environ["STORE"],
    )


async def pause():
    async with agent() as a:
        result = await a.run("pay bob 5")
        print(json.dumps({
            "status": result.status, "token": result.pause.token,
            "session_id": result.session_id, "pid": os.getpid(),
        }))


async def resume(token):
    a = agent()
    try:
        result = await a.resume(token, {"decision": "approve"})
        history = await a.store.history(result.session_id, result.revision)
    finally:
        await a.aclose()
    print(json.dumps({
        "status": result.status, "answer": result.answer, "revision": result.revision,
        "roles": [b["role"] for b in history], "pid": os.getpid(),
    }))


if sys.argv[1] == "pause":
    asyncio.run(pause())
else:
    asyncio.run(resume(sys.stdin.read()))
'''


def _run(script: Path, store: str, *args: str, stdin: str = "") -> tuple[dict, list[dict]]:
    done = subprocess.run(
        [sys.executable, str(script), *args],
        input=stdin, capture_output=True, text=True, timeout=120,
        env={**os.environ, "STORE": store},
    )
    assert done.returncode == 0, done.stderr
    ran = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    return json.loads(done.stdout.strip().splitlines()[-1]), ran


def test_pause_in_one_process_resume_in_another(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    store = f"sqlite:///{tmp_path / 'shared.db'}"

    paused, ran_in_pauser = _run(script, store, "pause")
    assert paused["status"] == "paused"
    assert ran_in_pauser == []  # the whole round waits for the person

    # The token travels out of band (stdin here), never on a command line.
    resumed, ran_in_resumer = _run(script, store, "resume", stdin=paused["token"])
    assert resumed["pid"] != paused["pid"]
    assert resumed["status"] == "complete" and resumed["revision"] == 1
    assert resumed["answer"].startswith("pay=sent 5 to bob (")
    assert "look=not dispatched" in resumed["answer"]
    assert resumed["roles"] == ["human", "ai", "tool", "tool", "ai"]
    assert [r["ran"] for r in ran_in_resumer] == ["send_payment"]
    assert {r["pid"] for r in ran_in_resumer} == {resumed["pid"]}

    # A third process replaying the same answer runs nothing again.
    replayed, ran_in_replayer = _run(script, store, "resume", stdin=paused["token"])
    assert (replayed["status"], replayed["answer"]) == ("complete", resumed["answer"])
    assert ran_in_replayer == []
