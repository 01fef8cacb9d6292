"""The kernel loop through the agent: observations, limits, streaming, keys, second pauses.

A tool that raises is an observation and the turn goes on; a turn that stops at
a limit or with an empty answer publishes nothing and says why; counters carry
through a pause; tools get an idempotency key that a resume does not change; a
second pause supersedes the first and the whole turn is published once.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from symfonic import Limits, RevisionConflict, SymfonicAgent
from symfonic.core.contracts.types import (
    TERMINAL_EVENTS,
    ErrorEvent,
    PauseState,
    ResponseCompleteEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnPausedEvent,
    TurnResult,
    TurnStartedEvent,
)
from symfonic.kernel.tools import idempotency_key
from symfonic.testing import ScriptedChatModel, call, calls, current_turn, reply

pytestmark = pytest.mark.anyio

Respond = Callable[[list[BaseMessage]], Any]


def _rounds(messages: list[BaseMessage]) -> int:
    return sum(isinstance(m, AIMessage) for m in current_turn(messages))


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


async def _revision(agent: SymfonicAgent, session_id: str) -> int:
    session = await agent.store.get_session(session_id)
    assert session is not None
    return session.revision


def _assert_well_formed(result: TurnResult) -> None:
    events = result.events
    assert isinstance(events[0], TurnStartedEvent)
    terminals = [e for e in events if isinstance(e, TERMINAL_EVENTS)]
    assert terminals == [events[-1]]


async def test_a_tool_that_raises_is_an_error_observation(sqlite_url: str) -> None:
    def explode(q: str) -> str:
        """Always fails."""
        raise ValueError(f"no such thing as {q}")

    seen: list[list[BaseMessage]] = []

    def respond(messages: list[BaseMessage]) -> Any:
        seen.append(messages)
        if _rounds(messages) == 0:
            return calls(("explode", {"q": "x"}, "c1"), ("nope", {}, "c2"))
        return reply("recovered")

    async with SymfonicAgent(
        model=ScriptedChatModel(respond=respond), tools=[explode], store=sqlite_url
    ) as agent:
        result = await agent.run("try")
    assert (result.status, result.answer, result.revision) == ("complete", "recovered", 1)
    _assert_well_formed(result)
    errors = {e.tool_call_id: e for e in result.events if isinstance(e, ToolResultEvent)}
    assert errors["c1"].status == "error"
    assert errors["c1"].content == "error: ValueError: no such thing as x"
    assert errors["c2"].status == "error" and "no tool named 'nope'" in errors["c2"].content
    tool_messages = [m for m in seen[-1] if isinstance(m, ToolMessage)]
    assert [m.status for m in tool_messages] == ["error", "error"]


async def test_the_tool_limit_fails_the_turn_and_publishes_nothing(store_url: str) -> None:
    def respond(messages: list[BaseMessage]) -> Any:
        if "loop" in str(current_turn(messages)[0].content):
            return call("lookup", {"q": "again"})
        return reply("ok")

    async with SymfonicAgent(
        model=ScriptedChatModel(respond=respond), tools=[lookup],
        limits=Limits(max_tool_rounds=2), store=store_url,
    ) as agent:
        result = await agent.run("loop forever")
        assert result.status == "failed" and result.error is not None
        assert result.error.code == "tool_limit"
        _assert_well_formed(result)
        assert sum(isinstance(e, ToolResultEvent) for e in result.events) == 2
        assert await _revision(agent, result.session_id) == 0
        assert await agent.store.history(result.session_id, 99) == []
        # The failed turn left the session free for the next one.
        after = await agent.run("now answer", result.session_id)
        assert (after.status, after.revision) == ("complete", 1)


async def test_an_empty_final_answer_fails_and_publishes_nothing(store_url: str) -> None:
    def respond(messages: list[BaseMessage]) -> Any:
        return reply("" if messages[-1].content == "empty" else "   \n")

    async with SymfonicAgent(model=ScriptedChatModel(respond=respond), store=store_url) as agent:
        for message in ("empty", "blank"):
            result = await agent.run(message)
            assert result.status == "failed" and result.error is not None
            assert result.error.code == "empty_answer"
            assert await _revision(agent, result.session_id) == 0


async def test_max_model_calls_stops_with_budget_exhausted(sqlite_url: str) -> None:
    made: list[int] = []

    def respond(messages: list[BaseMessage]) -> Any:
        made.append(1)
        return call("lookup", {"q": str(len(made))})

    async with SymfonicAgent(
        model=ScriptedChatModel(respond=respond), tools=[lookup],
        limits=Limits(max_model_calls=3, max_tool_rounds=50), store=sqlite_url,
    ) as agent:
        result = await agent.run("go")
        assert result.status == "failed" and result.error is not None
        assert result.error.code == "budget_exhausted"
        assert len(made) == 3
        assert await _revision(agent, result.session_id) == 0


async def test_max_tool_calls_stops_the_turn_before_any_call_runs(sqlite_url: str) -> None:
    ran: list[str] = []

    def note(text: str) -> str:
        """Note."""
        ran.append(text)
        return "ok"

    async with SymfonicAgent(
        model=ScriptedChatModel.from_script(
            [calls(*((("note", {"text": str(i)}, f"c{i}")) for i in range(3))), reply("x")]
        ),
        tools=[note], limits=Limits(max_tool_calls=2), store=sqlite_url,
    ) as agent:
        result = await agent.run("go")
        assert result.status == "failed" and result.error is not None
        assert result.error.code == "budget_exhausted"
        assert ran == []
        assert await _revision(agent, result.session_id) == 0


async def test_counters_carry_through_a_pause(store_url: str) -> None:
    def respond(messages: list[BaseMessage]) -> Any:
        rounds = _rounds(messages)
        if rounds == 0:
            return call("lookup", {"q": "a"}, id="c0")
        if rounds == 1:
            return call("ask_human", {"question": "more?"}, id="c1")
        return call("lookup", {"q": "b"}, id=f"c{rounds}")

    async with SymfonicAgent(
        model=ScriptedChatModel(respond=respond), tools=[lookup],
        limits=Limits(max_tool_rounds=2), store=store_url,
    ) as agent:
        paused = await agent.run("go")
        assert paused.pause is not None
        # Two rounds were used before the pause; the resume may not start over.
        result = await agent.resume(paused.pause.token, "yes")
        assert result.status == "failed" and result.error is not None
        assert result.error.code == "tool_limit"
        assert await _revision(agent, paused.session_id) == 0
        pause = await agent.store.get_pause(paused.pause.pause_id)
        assert pause is not None and pause.state is PauseState.ABANDONED


async def test_the_idempotency_key_is_stable_across_a_resume(store_url: str) -> None:
    keys: list[tuple[int, str]] = []

    def charge(amount: int, idempotency_key: str) -> str:
        """Charge a card."""
        keys.append((amount, idempotency_key))
        return "charged"

    def respond(messages: list[BaseMessage]) -> Any:
        if _rounds(messages) == 0:
            return calls(("charge", {"amount": 1}, "pay_a"), ("charge", {"amount": 2}, "pay_b"))
        return reply("done")

    agent = SymfonicAgent(
        model=ScriptedChatModel(respond=respond), tools=[charge], approval={"charge"},
        store=store_url,
    )
    async with agent:
        first = await agent.run("charge")
        other = await agent.run("charge")
        assert first.pause is not None and other.pause is not None
    # Resumed by a fresh agent: the key depends on session and call id alone.
    async with SymfonicAgent(
        model=ScriptedChatModel(respond=respond), tools=[charge], approval={"charge"},
        store=store_url,
    ) as fresh:
        await fresh.resume(first.pause.token, {"decision": "approve"})
        await fresh.resume(other.pause.token, {"decision": "approve"})
    assert keys == [
        (1, idempotency_key(first.session_id, "pay_a")),
        (1, idempotency_key(other.session_id, "pay_a")),
    ]
    assert keys[0][1] != keys[1][1]
    assert idempotency_key(first.session_id, "pay_a") != idempotency_key(first.session_id, "pay_b")
    assert idempotency_key("s", "c") == idempotency_key("s", "c")


async def test_text_deltas_are_streamed(sqlite_url: str) -> None:
    model = ScriptedChatModel.from_script(
        [call("lookup", {"q": "x"}), reply("the answer is forty two")]
    )
    async with SymfonicAgent(model=model, tools=[lookup], store=sqlite_url) as agent:
        events = [e async for e in agent.stream("what is it?")]
    deltas = [e.text for e in events if isinstance(e, TextDeltaEvent)]
    assert len(deltas) == 5
    assert "".join(deltas) == "the answer is forty two"
    complete = events[-1]
    assert isinstance(complete, ResponseCompleteEvent)
    assert complete.answer == "the answer is forty two" and complete.revision == 1
    kinds = [type(e) for e in events]
    assert kinds[:3] == [TurnStartedEvent, ToolCallEvent, ToolResultEvent]
    # Deltas come before the completion, never after.
    assert kinds.index(ResponseCompleteEvent) == len(kinds) - 1


class WholeReplyModel(BaseChatModel):
    """A model with no streaming of its own: langchain hands its whole AIMessage on."""

    @property
    def _llm_type(self) -> str:
        return "whole-reply"

    def bind_tools(self, tools: Any, **kwargs: Any) -> WholeReplyModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        if _rounds(messages) == 0:
            message = AIMessage(
                content="", tool_calls=[{"name": "lookup", "args": {"q": "x"}, "id": "c1"}]
            )
        else:
            message = AIMessage(content="found it")
        return ChatResult(generations=[ChatGeneration(message=message)])


async def test_a_model_that_cannot_stream_still_answers(sqlite_url: str) -> None:
    async with SymfonicAgent(
        model=WholeReplyModel(), tools=[lookup], store=sqlite_url
    ) as agent:
        events = [e async for e in agent.stream("what is it?")]
    deltas = [e.text for e in events if isinstance(e, TextDeltaEvent)]
    assert deltas == ["found it"]
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [r.tool_call_id for r in results] == ["c1"]
    complete = events[-1]
    assert isinstance(complete, ResponseCompleteEvent) and complete.answer == "found it"


async def test_a_second_pause_supersedes_and_the_turn_is_published_once(
    store_url: str,
) -> None:
    def respond(messages: list[BaseMessage]) -> Any:
        rounds = _rounds(messages)
        if rounds == 0:
            return call("ask_human", {"question": "first?"}, id="q1")
        if rounds == 1:
            return call("ask_human", {"question": "second?"}, id="q2")
        answers = [m.content for m in messages if isinstance(m, ToolMessage)]
        return reply(" and ".join(str(a) for a in answers))

    async with SymfonicAgent(
        model=ScriptedChatModel(respond=respond), store=store_url
    ) as agent:
        first = await agent.run("ask me twice")
        assert first.pause is not None
        second = await agent.resume(first.pause.token, "yes")
        assert second.status == "paused" and second.pause is not None
        assert second.pause.query == "second?" and second.pause.tool_call_id == "q2"
        assert second.revision == 0
        old = await agent.store.get_pause(first.pause.pause_id)
        new = await agent.store.get_pause(second.pause.pause_id)
        assert old is not None and new is not None
        assert old.state is PauseState.SUPERSEDED
        assert old.outcome == {"status": "paused", "pause_id": new.pause_id}
        assert new.state is PauseState.PENDING
        assert new.supersedes == old.pause_id
        assert new.base_revision == 0
        assert await agent.store.load_checkpoint(old.pause_id) is None
        assert await _revision(agent, first.session_id) == 0

        done = await agent.resume(second.pause.token, "sure")
        assert (done.status, done.answer, done.revision) == ("complete", "yes and sure", 1)
        history = await agent.store.history(first.session_id, 99)
        assert [b["role"] for b in history] == ["human", "ai", "tool", "ai", "tool", "ai"]
        assert history[0]["content"] == "ask me twice"
        assert await agent.store.load_checkpoint(new.pause_id) is None
        # Replaying the first answer again replays its outcome: the second pause.
        replay = await agent.resume(first.pause.token, "yes")
        assert replay.status == "paused" and replay.pause is not None
        assert replay.pause.pause_id == new.pause_id
        assert replay.pause.token == second.pause.token


async def test_the_model_sees_instructions_then_history_then_the_turn(store_url: str) -> None:
    seen: list[list[BaseMessage]] = []

    def respond(messages: list[BaseMessage]) -> Any:
        seen.append(messages)
        return reply(f"reply {len(seen)}")

    async with SymfonicAgent(
        model=ScriptedChatModel(respond=respond), instructions="Be brief.", store=store_url
    ) as agent:
        one = await agent.run("one")
        two = await agent.run("two", one.session_id)
        assert (two.revision, two.answer) == (2, "reply 2")
        with pytest.raises(RevisionConflict):
            await agent.run("three", one.session_id, base_revision=1)
    assert [type(m) for m in seen[1]] == [SystemMessage, HumanMessage, AIMessage, HumanMessage]
    assert [m.content for m in seen[1]] == ["Be brief.", "one", "reply 1", "two"]


async def test_a_model_that_fails_fails_the_turn_and_publishes_nothing(store_url: str) -> None:
    def respond(messages: list[BaseMessage]) -> Any:
        raise RuntimeError("provider is down")

    async with SymfonicAgent(model=ScriptedChatModel(respond=respond), store=store_url) as agent:
        result = await agent.run("hi")
        assert result.status == "failed" and result.error is not None
        assert result.error.code == "model_error"
        assert "provider is down" in result.error.message
        assert isinstance(result.events[-1], ErrorEvent)
        assert await _revision(agent, result.session_id) == 0
        session = await agent.store.get_session(result.session_id)
        assert session is not None and not session.running


async def test_async_and_sync_tools_both_run(sqlite_url: str) -> None:
    async def fetch(url: str) -> dict[str, str]:
        """Fetch a page."""
        return {"url": url, "body": "hello"}

    model = ScriptedChatModel.from_script(
        [calls(("fetch", {"url": "u"}, "a"), ("lookup", {"q": "v"}, "b")), reply("ok")]
    )
    async with SymfonicAgent(model=model, tools=[fetch, lookup], store=sqlite_url) as agent:
        result = await agent.run("go")
    contents = {e.tool_call_id: e.content for e in result.events if isinstance(e, ToolResultEvent)}
    assert contents == {"a": '{"url": "u", "body": "hello"}', "b": "found v"}


async def test_a_paused_first_turn_says_so_in_order(sqlite_url: str) -> None:
    model = ScriptedChatModel.from_script([call("ask_human", {"question": "?"}), reply("x")])
    async with SymfonicAgent(model=model, store=sqlite_url) as agent:
        result = await agent.run("go")
    _assert_well_formed(result)
    assert isinstance(result.events[-1], TurnPausedEvent)
    assert [type(e) for e in result.events] == [TurnStartedEvent, ToolCallEvent, TurnPausedEvent]


def test_limits_refuse_nonsense() -> None:
    for bad in ({"max_tool_rounds": 0}, {"max_model_calls": 0}, {"max_tool_calls": 0},
                {"max_tokens_per_turn": 0}):
        with pytest.raises(ValueError):
            Limits(**bad)


async def test_a_turn_and_its_resume_close_every_generator_they_open(sqlite_url: str) -> None:
    """Nothing is left for the event loop to close later, outside the turn.

    A generator dropped unfinished is closed by the loop's finalizer hook at
    some later moment, on a task of its own, after the turn (and perhaps its
    store) is gone -- and waking the loop for it costs every turn a system call.
    """
    left_open: list[str] = []
    firstiter, finalizer = sys.get_asyncgen_hooks()

    def record(generator: Any) -> None:
        left_open.append(generator.ag_code.co_qualname)
        if finalizer is not None:
            finalizer(generator)

    model = ScriptedChatModel.from_script([call("lookup", {"q": "x"}), reply("Found.")])
    async with SymfonicAgent(
        model=model, tools=[lookup], approval={"lookup"}, store=sqlite_url
    ) as agent:
        sys.set_asyncgen_hooks(firstiter, record)
        try:
            paused = await agent.run("look x up")
            assert paused.pause is not None
            done = await agent.resume(paused.pause.token, {"decision": "approve"})
            gc.collect()
        finally:
            sys.set_asyncgen_hooks(firstiter, finalizer)
    assert done.status == "complete"
    assert left_open == []
