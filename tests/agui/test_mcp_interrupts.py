"""An MCP server's question over ``POST /v1/agui``: the interrupt names the server,
and a front end can decline it as well as answer or cancel it.

The bank server (``tests/mcp_servers/bank_server.py``) writes each call it runs to a
ledger, with the action its question was answered with: what reached the server.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import Interrupt, RunFinishedInterruptOutcome, RunFinishedSuccessOutcome

from agui_support import AguiClient, agui_app, finished, run_body
from symfonic import SymfonicAgent
from symfonic.core.contracts.types import PauseState
from symfonic.mcp import MCPTools
from symfonic.server.service.host import ServiceHost
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BANK = Path(__file__).parents[1] / "mcp_servers" / "bank_server.py"
DECLINE = {"action": "decline"}


@asynccontextmanager
async def _bank_thread(
    store_url: str, ledger: Path
) -> AsyncIterator[tuple[ServiceHost, AguiClient, str, Interrupt]]:
    """A service whose agent's tool asks the bank's question, paused on it over AG-UI."""
    connection = {
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(BANK)],
        "env": {"BANK_LEDGER": str(ledger)},
    }
    script = [call("add_payee", {"name": "bob"}), reply("Done with bob.")]
    async with MCPTools({"bank": connection}, call_timeout=30) as tools:
        agent = SymfonicAgent(model=ScriptedChatModel.from_script(script), tools=tools)
        host = ServiceHost([agent], store=store_url)
        await host.open()
        client = AguiClient(agui_app(host))
        try:
            thread = f"t-{uuid.uuid4().hex}"
            outcome = finished(await client.run(run_body(thread, "add bob"))).outcome
            assert isinstance(outcome, RunFinishedInterruptOutcome)
            (interrupt,) = outcome.interrupts
            yield host, client, thread, interrupt
        finally:
            await client.aclose()
            await host.aclose()


def _answers(ledger: Path) -> list[Any]:
    ran = [json.loads(line) for line in ledger.read_text().splitlines()] if ledger.exists() else []
    return [entry["answer"] for entry in ran if entry["tool"] == "add_payee"]


async def test_the_interrupt_names_the_server_and_a_decline_reaches_it_as_decline(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    async with _bank_thread(store_url, ledger) as (host, client, thread, interrupt):
        assert (interrupt.reason, interrupt.message) == ("input_required", "What is bob's IBAN?")
        assert interrupt.metadata is not None and interrupt.metadata["symfonic"]["server"] == "bank"
        assert interrupt.response_schema is not None
        assert interrupt.response_schema["required"] == ["iban"]
        entry = {"interruptId": interrupt.id, "status": "resolved", "payload": DECLINE}
        events = await client.run(run_body(thread, resume=[entry]))
        assert isinstance(finished(events).outcome, RunFinishedSuccessOutcome)
        # The same entry again is a replay: nothing reaches the server a second time.
        again = await client.run(run_body(thread, resume=[entry]))
        assert isinstance(finished(again).outcome, RunFinishedSuccessOutcome)
        row = await host.store.get_pause(interrupt.metadata["symfonic"]["pauseId"])
    assert row is not None and (row.state, row.answer_status) == (PauseState.PUBLISHED, "declined")
    assert _answers(ledger) == ["decline"]


@pytest.mark.parametrize(
    ("status", "payload", "heard"),
    [("resolved", {"iban": "DE89"}, "accept"), ("cancelled", None, "cancel")],
)
async def test_an_answer_is_accept_and_a_cancelled_entry_is_cancel(
    sqlite_url: str, tmp_path: Path, status: str, payload: Any, heard: str
) -> None:
    ledger = tmp_path / "ledger"
    async with _bank_thread(sqlite_url, ledger) as (_, client, thread, interrupt):
        entry = {"interruptId": interrupt.id, "status": status, "payload": payload}
        events = await client.run(run_body(thread, resume=[entry]))
        assert isinstance(finished(events).outcome, RunFinishedSuccessOutcome)
    assert _answers(ledger) == [heard]
