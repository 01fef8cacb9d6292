"""MCP tools in an agent's turns: one kept connection, errors the model reads, approval.

A FastMCP (``MCPServer``) bank the tests start writes every call it runs to a
ledger, so each test counts what reached the server, not what symfonic says.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from mcp_support import entries, http_bank, stdio_connection  # type: ignore[import-not-found]
from symfonic import SymfonicAgent, needs_approval
from symfonic.kernel.tools import idempotency_key
from symfonic.mcp import MCPTools, load_mcp_tools
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _seeing(script: Sequence[AIMessage]) -> tuple[ScriptedChatModel, list[list[BaseMessage]]]:
    seen: list[list[BaseMessage]] = []
    scripted = ScriptedChatModel.from_script(script)

    def respond(messages: list[BaseMessage]) -> AIMessage | str:
        seen.append(list(messages))
        return scripted.respond(messages)

    return ScriptedChatModel(respond=respond), seen


def _last_result(seen: list[list[BaseMessage]]) -> ToolMessage:
    return next(m for m in reversed(seen[-1]) if isinstance(m, ToolMessage))


async def test_one_stdio_process_serves_every_call_of_every_turn(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    tools = await load_mcp_tools({"bank": stdio_connection(ledger)})
    model = ScriptedChatModel.from_script([call("balance"), reply("You have 100.")])
    async with SymfonicAgent(model=model, tools=tools, store=store_url) as agent:
        session = None
        for _ in range(3):
            done = await agent.run("what is my balance?", session_id=session)
            assert done.answer == "You have 100."
            session = done.session_id
    pids = {entry["pid"] for entry in entries(ledger)}
    assert len(entries(ledger)) == 3 and len(pids) == 1
    # The agent's ``async with`` closed the connection it was handed: the process is gone.
    (pid,) = pids
    with pytest.raises(ProcessLookupError):
        for _ in range(50):
            os.kill(pid, 0)
            await anyio.sleep(0.1)


async def test_an_is_error_result_is_a_tool_error_the_model_reads(
    store_url: str, tmp_path: Path
) -> None:
    model, seen = _seeing([call("overdraw", {"amount": 500}), reply("Not enough money.")])
    async with (
        MCPTools({"bank": stdio_connection(tmp_path / "ledger")}) as tools,
        SymfonicAgent(model=model, tools=tools, store=store_url) as agent,
    ):
        done = await agent.run("send 500")
    assert done.status == "complete"
    result = _last_result(seen)
    assert result.status == "error" and result.name == "overdraw"
    assert "insufficient funds for 500" in str(result.content)


async def test_a_server_that_dies_mid_call_is_a_tool_error_and_the_next_call_reconnects(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    seen: list[list[BaseMessage]] = []

    def respond(messages: list[BaseMessage]) -> AIMessage | str:
        seen.append(list(messages))
        if isinstance(messages[-1], ToolMessage):
            return str(messages[-1].content)
        return call("crash" if "crash" in str(messages[-1].content) else "balance")

    async with (
        MCPTools({"bank": stdio_connection(ledger)}, call_timeout=20) as tools,
        SymfonicAgent(
            model=ScriptedChatModel(respond=respond), tools=tools, store=store_url
        ) as agent,
    ):
        done = await agent.run("crash the bank")
        assert done.status == "complete"
        result = _last_result(seen)
        assert result.status == "error"
        assert "the MCP server bank stopped during the call" in str(result.content)
        again = await agent.run("balance?", session_id=done.session_id)
    assert again.answer == "balance: 100"
    crashed, served = entries(ledger)
    assert crashed["tool"] == "crash" and served["tool"] == "balance"
    assert crashed["pid"] != served["pid"]


async def test_a_call_that_outlives_its_timeout_is_a_tool_error(tmp_path: Path) -> None:
    async with MCPTools({"bank": stdio_connection(tmp_path / "ledger")}, call_timeout=2) as tools:
        (stall,) = [t for t in tools if t.name == "stall"]
        with pytest.raises(Exception, match="did not answer within 2 seconds"):
            await stall.ainvoke({"seconds": 30})


async def test_text_is_plain_and_structured_content_is_the_artifact(tmp_path: Path) -> None:
    async with MCPTools({"bank": stdio_connection(tmp_path / "ledger")}, prefix=True) as tools:
        named = {t.name: t for t in tools}
        assert "bank_transfer_funds" in named
        text = await named["bank_balance"].ainvoke(
            {"type": "tool_call", "id": "c1", "name": "bank_balance", "args": {}}
        )
        assert text.content == "balance: 100"
        shaped = await named["bank_statement"].ainvoke(
            {"type": "tool_call", "id": "c2", "name": "bank_statement", "args": {}}
        )
    assert shaped.artifact == {"transfers": [{"amount": 5, "to": "bob"}]}
    assert "lc_" not in str(shaped.content)


@pytest.mark.parametrize("transport", ["stdio", "streamable_http"])
async def test_reject_never_reaches_the_server_and_approve_runs_once_with_its_key(
    store_url: str, tmp_path: Path, transport: str
) -> None:
    ledger = tmp_path / "ledger"
    script = [call("transfer_funds", {"amount": 5, "to": "bob"}), reply("Done.")]
    with http_bank(ledger) if transport != "stdio" else _no_server(ledger) as connection:
        async with (
            MCPTools({"bank": connection}) as tools,
            SymfonicAgent(
                model=ScriptedChatModel.from_script(script),
                tools=tools,
                approval={"transfer_funds"},
                store=store_url,
            ) as agent,
        ):
            rejected = await agent.run("pay bob 5")
            assert rejected.pause is not None
            await agent.resume(rejected.pause.token, {"decision": "reject"})
            assert entries(ledger) == []
            approved = await agent.run("pay bob 5")
            assert approved.pause is not None
            await agent.resume(approved.pause.token, {"decision": "approve"})
            await agent.resume(approved.pause.token, {"decision": "approve"})
    (ran,) = entries(ledger)
    assert (ran["amount"], ran["to"]) == (5, "bob")
    assert ran["key"] == idempotency_key(approved.session_id, approved.pause.tool_call_id)


class _no_server:
    def __init__(self, ledger: Path) -> None:
        self.connection = stdio_connection(ledger)

    def __enter__(self) -> dict[str, object]:
        return self.connection

    def __exit__(self, *exc: object) -> None:
        return None


async def test_a_rule_gates_a_prefixed_mcp_tool_like_any_tool(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"

    def respond(messages: list[BaseMessage]) -> AIMessage | str:
        if isinstance(messages[-1], ToolMessage):
            return str(messages[-1].content)
        amount = int(str(messages[-1].content).split()[-1])
        return call("bank_transfer_funds", {"amount": amount, "to": "bob"})

    rule = needs_approval(lambda args: args["amount"] > 100)
    async with (
        MCPTools({"bank": stdio_connection(ledger)}, prefix=True) as tools,
        SymfonicAgent(
            model=ScriptedChatModel(respond=respond),
            tools=tools,
            approval={"bank_transfer_funds": rule},
            store=store_url,
        ) as agent,
    ):
        small = await agent.run("pay bob 5")
        large = await agent.run("pay bob 500")
        assert (small.status, small.answer) == ("complete", "sent 5 to bob")
        assert large.status == "paused" and [e["amount"] for e in entries(ledger)] == [5]
        assert large.pause is not None
        done = await agent.resume(large.pause.token, {"decision": "approve"})
    assert done.answer == "sent 500 to bob"
    assert [e["amount"] for e in entries(ledger)] == [5, 500]
