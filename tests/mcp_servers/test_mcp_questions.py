"""An MCP server's question (elicitation) is a durable pause, answered on any worker.

Each answer comes from a second agent with its own connection (for stdio, its
own server process), built after the first closed: it shares the store and
the server's address, nothing else. A stdio server seals its ``requestState``
with a key of its own process, so the second agent's server refuses the first
one's state, and the call is re-issued and answered from the store. The bank's
ledger counts what reached the server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from mcp_support import entries, http_bank, stdio_connection  # type: ignore[import-not-found]
from symfonic import SymfonicAgent
from symfonic.core.contracts.errors import InvalidAnswer
from symfonic.core.contracts.types import AnswerStatus, PauseState
from symfonic.kernel.tools import idempotency_key
from symfonic.mcp import MCPTools
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@contextmanager
def _bank(transport: str, ledger: Path) -> Iterator[dict[str, Any]]:
    if transport == "streamable_http":
        with http_bank(ledger) as connection:
            yield connection
        return
    connection = stdio_connection(ledger)
    if transport == "stdio, older protocol":
        connection["mode"] = "legacy"  # the SDK speaks 2025-11-25: questions come mid-call
    yield connection


class _Worker:
    """One agent over its own connections, sharing only the store with the others."""

    def __init__(
        self,
        store: str,
        bank: dict[str, Any],
        script: Sequence[AIMessage],
        approval: set[str] | None = None,
    ) -> None:
        self.seen: list[list[BaseMessage]] = []
        scripted = ScriptedChatModel.from_script(script)

        def respond(messages: list[BaseMessage]) -> AIMessage | str:
            self.seen.append(list(messages))
            return scripted.respond(messages)

        self.model = ScriptedChatModel(respond=respond)
        self.store, self.bank, self.approval = store, bank, approval or set()

    async def __aenter__(self) -> SymfonicAgent:
        self._tools = MCPTools({"bank": self.bank}, call_timeout=30)
        await self._tools.__aenter__()
        self._agent = SymfonicAgent(
            model=self.model, tools=self._tools, store=self.store, approval=self.approval
        )
        return await self._agent.__aenter__()

    async def __aexit__(self, *exc: object) -> None:
        await self._agent.__aexit__(None, None, None)
        await self._tools.aclose()


def _ran(ledger: Path, tool: str) -> list[dict[str, Any]]:
    return [entry for entry in entries(ledger) if entry["tool"] == tool]


@pytest.mark.parametrize("transport", ["stdio", "streamable_http", "stdio, older protocol"])
async def test_a_question_is_a_form_pause_answered_once_on_another_worker(
    store_url: str, tmp_path: Path, transport: str
) -> None:
    ledger = tmp_path / "ledger"
    script = [call("add_payee", {"name": "bob"}), reply("Added bob.")]
    with _bank(transport, ledger) as bank:
        async with _Worker(store_url, bank, script) as first:
            paused = await first.run("add bob as a payee")
        assert paused.status == "paused" and paused.pause is not None
        pause = paused.pause
        assert (pause.kind.value, pause.query) == ("form", "What is bob's IBAN?")
        assert pause.server == "bank"
        assert pause.response_schema["properties"]["iban"]["type"] == "string"
        assert pause.response_schema["required"] == ["iban"]
        assert _ran(ledger, "add_payee") == []  # the tool's body waits for the answer

        other = _Worker(store_url, bank, script)
        async with other as second:
            with pytest.raises(InvalidAnswer, match="iban must be text"):
                await second.resume(pause.token, {"iban": 5})
            done = await second.resume(pause.token, {"iban": "DE89"})
            assert (done.status, done.answer) == ("complete", "Added bob.")
            replayed = await second.resume(pause.token, {"iban": "DE89"})
            assert (replayed.status, replayed.revision) == ("complete", done.revision)
    (ran,) = _ran(ledger, "add_payee")
    assert (ran["answer"], ran["iban"]) == ("accept", "DE89")
    assert ran["key"] == idempotency_key(paused.session_id, pause.tool_call_id)
    # The model reads the server's result, named after the tool it called.
    (observed,) = [m for m in other.seen[-1] if isinstance(m, ToolMessage)]
    assert (observed.name, observed.content) == ("add_payee", "bob: DE89")
    if transport != "streamable_http":
        # The second worker's server never saw the first round: it was asked again
        # and answered from the store, where a stdio server refused the old state.
        assert len({entry["pid"] for entry in _ran(ledger, "ask_iban")}) == 2


@pytest.mark.parametrize(("status", "action"), [("cancelled", "cancel"), ("declined", "decline")])
async def test_a_cancelled_or_declined_question_reaches_the_server_as_such(
    store_url: str, tmp_path: Path, status: AnswerStatus, action: str
) -> None:
    ledger = tmp_path / "ledger"
    script = [call("add_payee", {"name": "bob"}), reply("Not added.")]
    bank = stdio_connection(ledger)
    async with _Worker(store_url, bank, script) as first:
        paused = await first.run("add bob as a payee")
    assert paused.pause is not None
    async with _Worker(store_url, bank, script) as second:
        done = await second.resume(paused.pause.token, None, status=status)
    assert done.status == "complete"
    (ran,) = _ran(ledger, "add_payee")
    assert ran["answer"] == action


async def test_a_second_question_is_a_new_pause_that_supersedes_the_first(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    script = [call("add_limited_payee", {"name": "bob"}), reply("Added with a limit.")]
    bank = stdio_connection(ledger)
    async with _Worker(store_url, bank, script) as first:
        paused = await first.run("add bob with a limit")
    assert paused.pause is not None and paused.pause.query == "What is bob's IBAN?"
    async with _Worker(store_url, bank, script) as second:
        asked_again = await second.resume(paused.pause.token, {"iban": "DE89"})
        assert asked_again.status == "paused" and asked_again.pause is not None
        assert asked_again.pause.query == "How much may bob be sent a day?"
        assert _ran(ledger, "add_limited_payee") == []
        first_pause = await second.store.get_pause(paused.pause.pause_id)
        assert first_pause is not None and first_pause.state is PauseState.SUPERSEDED
    async with _Worker(store_url, bank, script) as third:
        done = await third.resume(asked_again.pause.token, {"limit": 50})
    assert (done.status, done.answer) == ("complete", "Added with a limit.")
    (ran,) = _ran(ledger, "add_limited_payee")
    assert ran["limit"] == 50


async def test_a_url_question_shows_the_url_and_the_person_confirms(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    script = [call("sign_in"), reply("Signed in.")]
    bank = stdio_connection(ledger)
    async with _Worker(store_url, bank, script) as first:
        paused = await first.run("sign me in")
    assert paused.pause is not None and paused.pause.kind.value == "form"
    assert "https://bank.example/login" in paused.pause.query
    async with _Worker(store_url, bank, script) as second:
        with pytest.raises(InvalidAnswer):
            await second.resume(paused.pause.token, {"done": False})
        done = await second.resume(paused.pause.token, {"done": True})
    assert done.status == "complete"
    (ran,) = _ran(ledger, "sign_in")
    assert ran["answer"] == "accept"


async def test_an_approved_tool_that_asks_pauses_again_on_its_question(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    script = [call("add_payee", {"name": "bob"}), reply("Added bob.")]
    async with (
        MCPTools({"bank": stdio_connection(ledger)}, call_timeout=30) as tools,
        SymfonicAgent(
            model=ScriptedChatModel.from_script(script),
            tools=tools,
            approval={"add_payee"},
            store=store_url,
        ) as agent,
    ):
        gated = await agent.run("add bob as a payee")
        assert gated.pause is not None and gated.pause.kind.value == "approval"
        asked = await agent.resume(gated.pause.token, {"decision": "approve"})
        assert asked.pause is not None
        assert (asked.pause.kind.value, asked.pause.query) == ("form", "What is bob's IBAN?")
        done = await agent.resume(asked.pause.token, {"iban": "DE89"})
    assert (done.status, done.answer) == ("complete", "Added bob.")
    (ran,) = _ran(ledger, "add_payee")
    assert ran["iban"] == "DE89"


async def test_a_resumed_call_keeps_its_structured_content_as_a_call_that_never_paused(
    store_url: str, tmp_path: Path
) -> None:
    bank = stdio_connection(tmp_path / "ledger")
    direct = _Worker(store_url, bank, [call("statement"), reply("Here it is.")])
    async with direct as agent:
        await agent.run("show my statement")
    (straight,) = [m for m in direct.seen[-1] if isinstance(m, ToolMessage)]
    assert straight.artifact == {"transfers": [{"amount": 5, "to": "bob"}]}
    assert json.loads(str(straight.content)) == straight.artifact

    script = [call("payee_record", {"name": "bob"}), reply("Added bob.")]
    async with _Worker(store_url, bank, script) as first:
        paused = await first.run("add bob and show me the record")
    assert paused.pause is not None
    resumed = _Worker(store_url, bank, script)
    async with resumed as second:
        done = await second.resume(paused.pause.token, {"iban": "DE89"})
    assert done.status == "complete"
    # The structured content is the artifact and the server's text the content, as above.
    (observed,) = [m for m in resumed.seen[-1] if isinstance(m, ToolMessage)]
    assert (observed.name, observed.status) == ("payee_record", "success")
    assert observed.artifact == {"name": "bob", "iban": "DE89"}
    assert json.loads(str(observed.content)) == observed.artifact


async def test_an_approved_call_keeps_its_structured_content_on_the_other_worker(
    store_url: str, tmp_path: Path
) -> None:
    script = [call("statement"), reply("Here it is.")]
    bank = stdio_connection(tmp_path / "ledger")
    async with _Worker(store_url, bank, script, approval={"statement"}) as first:
        gated = await first.run("show my statement")
    assert gated.pause is not None and gated.pause.kind.value == "approval"
    approving = _Worker(store_url, bank, script, approval={"statement"})
    async with approving as second:
        done = await second.resume(gated.pause.token, {"decision": "approve"})
    assert done.status == "complete"
    (observed,) = [m for m in approving.seen[-1] if isinstance(m, ToolMessage)]
    assert observed.artifact == {"transfers": [{"amount": 5, "to": "bob"}]}
