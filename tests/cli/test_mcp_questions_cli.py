"""An MCP server's question at the terminal: named, and declined as MCP's ``decline``.

MCP tells a person's explicit refusal (``decline``) from a question dismissed
without a choice (``cancel``). Declining at a prompt of ``symfonic chat`` or
``symfonic pauses`` is the refusal, so the server must hear ``decline``; the
bank server (``tests/mcp_servers/bank_server.py``) writes what it heard to its
ledger.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from symfonic import SymfonicAgent
from symfonic.cli.chat import converse
from symfonic.cli.client import Client
from symfonic.cli.pauses import review
from symfonic.cli.terminal import Terminal
from symfonic.core.contracts.types import PauseState
from symfonic.mcp import MCPTools
from symfonic.server.app import create_app
from symfonic.testing import ScriptedChatModel, call, reply
from test_clients import typed

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BANK = Path(__file__).parents[1] / "mcp_servers" / "bank_server.py"


@asynccontextmanager
async def _bank_service(
    store_url: str, ledger: Path
) -> AsyncIterator[tuple[Client, SymfonicAgent]]:
    connection = {
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(BANK)],
        "env": {"BANK_LEDGER": str(ledger)},
    }
    script = [call("add_payee", {"name": "bob"}), reply("Not added.")]
    async with MCPTools({"bank": connection}, call_timeout=30) as tools:
        agent = SymfonicAgent(
            model=ScriptedChatModel.from_script(script), tools=tools, store=store_url
        )
        app = create_app(agent, api_keys="", sweep_interval=0)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app)
            async with Client("http://symfonic", transport=transport) as client:
                yield client, agent


def _heard(ledger: Path) -> list[Any]:
    ran = [json.loads(line) for line in ledger.read_text().splitlines()]
    return [entry["answer"] for entry in ran if entry["tool"] == "add_payee"]


async def test_chat_names_the_server_and_an_empty_answer_declines(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "ledger"
    async with _bank_service(sqlite_url, ledger) as (client, agent):
        await converse(client, None, Terminal(), typed("add bob as a payee", ""))
        (answered,) = await agent.pauses("local", PauseState.PUBLISHED)
    out = capsys.readouterr().out
    assert "What is bob's IBAN?" in out and "asked by MCP server bank" in out
    assert answered.answer_status == "declined"
    assert _heard(ledger) == ["decline"]


async def test_pauses_lists_the_server_and_a_decline_reaches_it_as_decline(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "ledger"
    async with _bank_service(sqlite_url, ledger) as (client, agent):
        waiting = await agent.run("add bob as a payee")
        assert waiting.pause is not None and waiting.pause.server == "bank"
        reviewed = await review(client, Terminal(), answer=True, ask=typed(""))
        row = await agent.store.get_pause(waiting.pause.pause_id)
    assert (reviewed.listed, reviewed.refused) == (1, 0)
    listing = capsys.readouterr().out
    assert "What is bob's IBAN?" in listing and "asked by MCP server bank" in listing
    assert row is not None and row.answer_status == "declined"
    assert _heard(ledger) == ["decline"]
