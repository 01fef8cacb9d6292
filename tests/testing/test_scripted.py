"""The scripted chat model: deterministic, streaming, tool-binding, offline.

``respond`` is a function of the transcript, so concurrent sessions each get
their own replies; tool call ids derive from the transcript, so the same
transcript always gets the same ids.
"""

from __future__ import annotations

import anyio
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.tools import tool

from symfonic import SymfonicAgent
from symfonic.testing import ScriptedChatModel, call, calls, reply

pytestmark = pytest.mark.anyio


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return q


def test_from_script_replies_by_position_in_the_turn() -> None:
    model = ScriptedChatModel.from_script([call("lookup", {"q": "x"}), reply("done")])
    first = model.invoke([HumanMessage("hi")])
    assert isinstance(first, AIMessage) and first.tool_calls[0]["name"] == "lookup"
    second = model.invoke([HumanMessage("hi"), first])
    assert second.content == "done" and not second.tool_calls
    # Past the end, the last reply repeats; a new human message starts over.
    assert model.invoke([HumanMessage("hi"), first, second]).content == "done"
    again = model.invoke([HumanMessage("hi"), first, second, HumanMessage("more")])
    assert again.tool_calls


def test_an_empty_script_is_refused() -> None:
    with pytest.raises(ValueError):
        ScriptedChatModel.from_script([])


def test_tool_call_ids_derive_from_the_transcript() -> None:
    model = ScriptedChatModel(respond=lambda messages: calls(("a", {}, None), ("b", {}, None)))
    one = model.invoke([HumanMessage("x")])
    same = model.invoke([HumanMessage("x")])
    other = model.invoke([HumanMessage("y")])
    ids = [c["id"] for c in one.tool_calls]
    assert ids == [c["id"] for c in same.tool_calls]
    assert len(set(ids)) == 2 and all(ids)
    assert set(ids).isdisjoint(c["id"] for c in other.tool_calls)
    explicit = ScriptedChatModel.from_script([call("a", id="mine")]).invoke([HumanMessage("x")])
    assert explicit.tool_calls[0]["id"] == "mine"


async def test_it_streams_words_then_tool_calls() -> None:
    message = AIMessage(
        content="let me check",
        tool_calls=[{"name": "lookup", "args": {"q": "z"}, "id": "c1", "type": "tool_call"}],
    )
    model = ScriptedChatModel(respond=lambda messages: message).bind_tools([lookup])
    chunks = [c async for c in model.astream([HumanMessage("hi")])]
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    assert [c.content for c in chunks if c.content] == ["let ", "me ", "check"]
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole = whole + chunk
    assert whole.content == "let me check"
    assert [(c["name"], c["args"], c["id"]) for c in whole.tool_calls] == [
        ("lookup", {"q": "z"}, "c1")
    ]


async def test_an_empty_reply_still_streams() -> None:
    model = ScriptedChatModel(respond=lambda messages: "")
    chunks = [c async for c in model.astream([HumanMessage("hi")])]
    assert chunks and all(c.content == "" and not c.tool_calls for c in chunks)


async def test_concurrent_sessions_stay_deterministic(sqlite_url: str) -> None:
    def respond(messages: list[BaseMessage]) -> str:
        return f"echo {messages[-1].content}"

    async with SymfonicAgent(model=ScriptedChatModel(respond=respond), store=sqlite_url) as agent:
        answers: dict[int, str | None] = {}

        async def one(i: int) -> None:
            answers[i] = (await agent.run(f"m{i}")).answer

        async with anyio.create_task_group() as group:
            for i in range(8):
                group.start_soon(one, i)
    assert answers == {i: f"echo m{i}" for i in range(8)}
