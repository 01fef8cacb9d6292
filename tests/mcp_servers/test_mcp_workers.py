"""An MCP call paused in one worker process runs once, answered from another.

A gated tool is approved there; a tool whose server asks a question is answered there.
The processes share the store and the server's address, nothing else: the
resuming worker builds its agent and its MCP connection from scratch, and its
first call is the resume. The server's ledger counts what reached it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mcp_support import entries, http_bank, stdio_connection  # type: ignore[import-not-found]
from symfonic.kernel.tools import idempotency_key

pytestmark = pytest.mark.slow

WORKER = """
import asyncio, json, os, sys

from symfonic import SymfonicAgent
from symfonic.mcp import load_mcp_tools
from symfonic.testing import ScriptedChatModel, call, reply


ANSWERS = {"approve": {"decision": "approve"}, "answer": {"iban": "DE89"}}


async def main(mode):
    tools = await load_mcp_tools({"bank": json.loads(os.environ["BANK"])}, prefix=True)
    first = (
        call("bank_add_payee", {"name": "bob"})
        if os.environ.get("ASK")
        else call("bank_transfer_funds", {"amount": 5, "to": "bob"})
    )
    model = ScriptedChatModel.from_script([first, reply("Paid.")])
    async with SymfonicAgent(
        model=model, tools=tools, approval={"bank_transfer_funds"}, store=os.environ["STORE"]
    ) as agent:
        if mode == "pause":
            result = await agent.run("pay bob 5")
            out = {"token": result.pause.token, "call": result.pause.tool_call_id}
        else:
            result = await agent.resume(sys.stdin.read(), ANSWERS[mode])
            out = {"answer": result.answer, "revision": result.revision}
    print(json.dumps({**out, "status": result.status, "session_id": result.session_id}))


asyncio.run(main(sys.argv[1]))
"""


def _worker(
    script: Path, store: str, bank: dict[str, Any], mode: str, stdin: str = "", ask: bool = False
) -> Any:
    env = {**os.environ, "STORE": store, "BANK": json.dumps(bank), "ASK": "1" if ask else ""}
    done = subprocess.run(
        [sys.executable, str(script), mode],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@contextmanager
def _bank(transport: str, ledger: Path) -> Iterator[dict[str, Any]]:
    if transport == "stdio":
        yield stdio_connection(ledger)
        return
    with http_bank(ledger) as connection:
        yield connection


@pytest.mark.parametrize("transport", ["stdio", "streamable_http"])
def test_a_gated_mcp_tool_runs_once_after_approval_from_another_worker(
    store_url: str, tmp_path: Path, transport: str
) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    ledger = tmp_path / "ledger"
    with _bank(transport, ledger) as bank:
        paused = _worker(script, store_url, bank, "pause")
        assert paused["status"] == "paused" and entries(ledger) == []
        resumed = _worker(script, store_url, bank, "approve", stdin=paused["token"])
        assert (resumed["status"], resumed["answer"]) == ("complete", "Paid.")
        replayed = _worker(script, store_url, bank, "approve", stdin=paused["token"])
        assert (replayed["status"], replayed["revision"]) == ("complete", resumed["revision"])
    (ran,) = [entry for entry in entries(ledger) if entry["tool"] == "transfer_funds"]
    assert (ran["amount"], ran["to"]) == (5, "bob")
    assert ran["key"] == idempotency_key(paused["session_id"], paused["call"])


@pytest.mark.parametrize("transport", ["stdio", "streamable_http"])
def test_a_question_asked_in_one_worker_is_answered_once_from_another(
    store_url: str, tmp_path: Path, transport: str
) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    ledger = tmp_path / "ledger"
    with _bank(transport, ledger) as bank:
        paused = _worker(script, store_url, bank, "pause", ask=True)
        assert paused["status"] == "paused"
        answered = _worker(script, store_url, bank, "answer", stdin=paused["token"], ask=True)
        assert (answered["status"], answered["answer"]) == ("complete", "Paid.")
        replayed = _worker(script, store_url, bank, "answer", stdin=paused["token"], ask=True)
        assert (replayed["status"], replayed["revision"]) == ("complete", answered["revision"])
    (ran,) = [entry for entry in entries(ledger) if entry["tool"] == "add_payee"]
    assert (ran["answer"], ran["iban"]) == ("accept", "DE89")
    assert ran["key"] == idempotency_key(paused["session_id"], paused["call"])
