"""Every sentence of the rehydration page, checked.

``rehydrate`` rebuilds a paused turn from ``outcome.turn`` alone: the answer is a
tool message on ``outcome.tool_call_id or outcome.interrupt_id``, every other call
the paused round reserved gets ``NOT_DISPATCHED``, a missing turn is refused with
an error that says why, and a resume reads the turn from the checkpoint port on
that call -- never from anything the pausing process kept.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from symfonic import SymfonicAgent
from symfonic.agent.cutover.rehydration import (
    NOT_DISPATCHED,
    InteractionConfigurationError,
    rehydrate,
)
from symfonic.capabilities.human.turnstate import (
    ResumeOutcome,
    TurnCheckpoint,
    TurnCheckpointStore,
)
from symfonic.core.contracts.store import Claim, Store
from symfonic.core.contracts.types import InteractionKind, PauseInfo, PendingInteraction
from symfonic.core.messages import body_of
from symfonic.kernel.loop import Counters
from symfonic.storage import open_store
from symfonic.testing import ScriptedChatModel, calls, reply

pytestmark = pytest.mark.anyio


def _checkpoint(answered: str = "c2") -> TurnCheckpoint:
    round_ = AIMessage(
        content="",
        tool_calls=[
            {"id": "c1", "name": "lookup", "args": {"q": "x"}, "type": "tool_call"},
            {"id": "c2", "name": "ask_human", "args": {"question": "ok?"}, "type": "tool_call"},
            {"id": "c3", "name": "lookup", "args": {"q": "y"}, "type": "tool_call"},
        ],
    )
    return TurnCheckpoint(
        pause_id="p1",
        session_id="s1",
        base_revision=0,
        messages=(body_of(HumanMessage("hello")), body_of(round_)),
        counters=Counters(rounds=1, model_calls=1),
        interaction=PendingInteraction(
            kind=InteractionKind.INPUT,
            tool_call_id=answered,
            tool_name="ask_human",
            args={"question": "ok?"},
            query="ok?",
            response_schema={"type": "string"},
        ),
    )


def _tool_messages(messages: tuple[BaseMessage, ...]) -> dict[str, str]:
    return {
        m.tool_call_id: str(m.content) for m in messages if isinstance(m, ToolMessage)
    }


def test_the_answer_is_the_observation_of_the_reserved_call_id() -> None:
    outcome = ResumeOutcome(
        turn=_checkpoint(), response="yes", tool_call_id="c2", interrupt_id="int_p1"
    )
    messages = rehydrate(outcome)
    assert [type(m) for m in messages[:2]] == [HumanMessage, AIMessage]
    assert messages[0].content == "hello"
    answer = messages[2]
    assert isinstance(answer, ToolMessage)
    assert (answer.tool_call_id, answer.content) == ("c2", "yes")


def test_without_a_tool_call_id_the_interrupt_id_is_the_reserved_call() -> None:
    outcome = ResumeOutcome(
        turn=_checkpoint(), response="yes", tool_call_id=None, interrupt_id="c2"
    )
    assert _tool_messages(rehydrate(outcome))["c2"] == "yes"


def test_tool_call_id_wins_over_interrupt_id() -> None:
    outcome = ResumeOutcome(
        turn=_checkpoint(), response="yes", tool_call_id="c2", interrupt_id="int_other"
    )
    observed = _tool_messages(rehydrate(outcome))
    assert observed["c2"] == "yes"
    assert "int_other" not in observed


def test_every_other_reserved_call_gets_not_dispatched_exactly_once() -> None:
    outcome = ResumeOutcome(
        turn=_checkpoint(), response="yes", tool_call_id="c2", interrupt_id="int_p1"
    )
    messages = rehydrate(outcome)
    tools = [m for m in messages if isinstance(m, ToolMessage)]
    # One observation per reserved call, all right after the assistant message.
    assert sorted(m.tool_call_id for m in tools) == ["c1", "c2", "c3"]
    assert messages[2:] == tuple(tools)
    assert {m.tool_call_id: m.content for m in tools} == {
        "c1": NOT_DISPATCHED,
        "c2": "yes",
        "c3": NOT_DISPATCHED,
    }


def test_a_structured_answer_becomes_json_text() -> None:
    outcome = ResumeOutcome(
        turn=_checkpoint(), response={"b": 1, "a": [2]}, tool_call_id="c2", interrupt_id="i"
    )
    assert _tool_messages(rehydrate(outcome))["c2"] == '{"a": [2], "b": 1}'


def test_messages_come_only_from_the_recorded_turn() -> None:
    checkpoint = _checkpoint()
    edited = replace(
        checkpoint,
        messages=(body_of(HumanMessage("a different question")), *checkpoint.messages[1:]),
    )
    messages = rehydrate(
        ResumeOutcome(turn=edited, response="yes", tool_call_id="c2", interrupt_id="i")
    )
    assert messages[0].content == "a different question"
    assert len(messages) == 2 + 3


def test_no_turn_is_refused_with_a_reason() -> None:
    outcome = ResumeOutcome(turn=None, response="yes", tool_call_id="c2", interrupt_id="i")
    with pytest.raises(InteractionConfigurationError) as raised:
        rehydrate(outcome)
    message = str(raised.value)
    assert "no recorded turn state" in message
    assert "never seen" in message


def test_the_seed_import_path_reexports_the_error_type() -> None:
    from symfonic.core.contracts.errors import (
        ConfigurationError,
    )
    from symfonic.core.contracts.errors import (
        InteractionConfigurationError as Canonical,
    )

    assert InteractionConfigurationError is Canonical
    assert issubclass(InteractionConfigurationError, ConfigurationError)


# --- through the agent: the turn comes from the checkpoint port ------------------


def _asking_model(seen: list[list[BaseMessage]]) -> ScriptedChatModel:
    def respond(messages: list[BaseMessage]) -> AIMessage | str:
        seen.append(list(messages))
        last = messages[-1]
        if isinstance(last, HumanMessage):
            return calls(
                ("lookup", {"q": "a"}, "call_a"),
                ("ask_human", {"question": "which one?"}, "call_ask"),
                ("lookup", {"q": "b"}, "call_b"),
            )
        answered = {m.tool_call_id: m.content for m in messages if isinstance(m, ToolMessage)}
        return reply(f"you said {answered.get('call_ask')}")

    return ScriptedChatModel(respond=respond)


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def _agent(url: str, seen: list[list[BaseMessage]]) -> SymfonicAgent:
    return SymfonicAgent(model=_asking_model(seen), tools=[lookup], store=url)


async def _paused_by_another(url: str, seen: list[list[BaseMessage]]) -> PauseInfo:
    """A pause made by an agent that is closed again: nothing it held survives."""
    async with _agent(url, seen) as first:
        paused = await first.run("pick one")
    assert paused.pause is not None
    return paused.pause


@asynccontextmanager
async def _paused_on_the_port(
    url: str, seen: list[list[BaseMessage]]
) -> AsyncIterator[tuple[Store, SymfonicAgent, PauseInfo]]:
    """An agent on a store this test holds, with one turn paused through it."""
    async with open_store(url) as store:
        agent = _agent(url, seen)
        agent.use_store(store)
        async with agent:
            paused = await agent.run("pick one")
            assert paused.pause is not None
            yield store, agent, paused.pause


async def test_a_fresh_agent_and_store_resume_what_another_paused(store_url: str) -> None:
    seen: list[list[BaseMessage]] = []
    pause = await _paused_by_another(store_url, seen)
    fresh = _agent(store_url, seen)
    try:
        done = await fresh.resume(pause.token, "the blue one")
    finally:
        await fresh.aclose()
    assert (done.status, done.answer) == ("complete", "you said the blue one")
    resumed_call = seen[-1]
    observed = {m.tool_call_id: m.content for m in resumed_call if isinstance(m, ToolMessage)}
    assert observed == {
        "call_a": NOT_DISPATCHED,
        "call_ask": "the blue one",
        "call_b": NOT_DISPATCHED,
    }


async def test_resume_is_the_first_thing_a_fresh_worker_does(store_url: str) -> None:
    seen: list[list[BaseMessage]] = []
    pause = await _paused_by_another(store_url, seen)
    fresh = _agent(store_url, seen)  # never opened: resume opens its own pool
    try:
        assert fresh._store is None
        done = await fresh.resume(pause.token, "red")
    finally:
        await fresh.aclose()
    assert done.answer == "you said red"


async def test_resume_reads_the_turn_from_the_checkpoint_port_on_this_call(
    store_url: str,
) -> None:
    seen: list[list[BaseMessage]] = []
    async with _paused_on_the_port(store_url, seen) as (store, agent, pause):
        loads: list[str] = []
        real_claim = store.claim_pause

        async def spy(claim: Claim) -> Any:
            loads.append(claim.pause_id)
            claimed = await real_claim(claim)
            assert claimed is not None and claimed.checkpoint is not None
            # What the port returns is what the model is sent: alter the
            # recorded user message and the resumed turn must carry it.
            record = claimed.checkpoint
            body = dict(record.body)
            body["messages"] = [
                {"role": "human", "content": "recorded on the port"},
                *body["messages"][1:],
            ]
            return replace(claimed, checkpoint=replace(record, body=body))

        store.claim_pause = spy  # type: ignore[method-assign]
        done = await agent.resume(pause.token, "green")
    assert loads == [pause.pause_id]
    assert done.answer == "you said green"
    resumed_call = seen[-1]
    humans = [m.content for m in resumed_call if isinstance(m, HumanMessage)]
    assert humans == ["recorded on the port"]
    # And that is what was published.
    async with open_store(store_url) as store:
        history = await store.history(done.session_id, done.revision)
    assert history[0] == {"role": "human", "content": "recorded on the port"}


async def test_a_missing_checkpoint_fails_the_resume_and_abandons_the_pause(
    store_url: str,
) -> None:
    seen: list[list[BaseMessage]] = []
    async with _paused_on_the_port(store_url, seen) as (store, agent, pause):
        real_claim = store.claim_pause

        async def gone(claim: Claim) -> Any:
            claimed = await real_claim(claim)
            assert claimed is not None
            return replace(claimed, checkpoint=None)

        store.claim_pause = gone  # type: ignore[method-assign]
        failed = await agent.resume(pause.token, "green")
        assert failed.status == "failed" and failed.error is not None
        assert failed.error.code == "configuration"
        assert "no recorded turn state" in failed.error.message
        row = await store.get_pause(pause.pause_id)
        assert row is not None and row.state.value == "abandoned"
        session = await store.get_session(failed.session_id)
        assert session is not None and session.revision == 0


async def test_turn_checkpoint_store_reads_the_port_every_time(store_url: str) -> None:
    seen: list[list[BaseMessage]] = []
    async with _paused_on_the_port(store_url, seen) as (store, _, pause):
        checkpoints = TurnCheckpointStore(store)
        calls_made: list[str] = []
        real_load = store.load_checkpoint

        async def counting(pause_id: str) -> Any:
            calls_made.append(pause_id)
            return await real_load(pause_id)

        store.load_checkpoint = counting  # type: ignore[method-assign]
        first = await checkpoints.load(pause.pause_id)
        second = await checkpoints.load(pause.pause_id)
        assert calls_made == [pause.pause_id] * 2
        assert first == second
        assert first is not None and first.interaction.tool_call_id == "call_ask"
        assert first.base_revision == 0
        assert await checkpoints.load("0" * 32) is None


async def test_the_answer_must_be_for_the_call_the_round_stopped_at() -> None:
    from symfonic.agent.cutover.kernel_resume import kernel_resume
    from symfonic.capabilities.human.toolbox import ToolBox
    from symfonic.kernel.limits import Limits
    from symfonic.kernel.loop import Kernel

    kernel = Kernel(ScriptedChatModel.from_script(["x"]), ToolBox(), Limits(), "s1")
    outcome = ResumeOutcome(
        turn=_checkpoint(), response="yes", tool_call_id="c3", interrupt_id="i"
    )
    with pytest.raises(InteractionConfigurationError, match="stopped at 'c2'"):
        async for _ in kernel_resume(kernel, outcome, []):
            pass
    with pytest.raises(InteractionConfigurationError, match="no recorded turn state"):
        async for _ in kernel_resume(kernel, replace(outcome, turn=None), []):
            pass


async def test_a_checkpoint_holds_the_turn_not_the_history(sqlite_url: str) -> None:
    seen: list[list[BaseMessage]] = []
    async with _agent(sqlite_url, seen) as agent:
        session_id = await agent.create_session()
        history = [
            {"role": "human" if i % 2 == 0 else "ai", "content": f"old {i}"} for i in range(200)
        ]
        await agent.seed_history(session_id, history)
        paused = await agent.run("pick one", session_id)
        assert paused.pause is not None
        record = await agent.store.load_checkpoint(paused.pause.pause_id)
        assert record is not None and record.base_revision == 1
        assert [b["role"] for b in record.body["messages"]] == ["human", "ai"]
        assert record.body["messages"][0]["content"] == "pick one"
        done = await agent.resume(paused.pause.token, "blue")
        assert done.revision == 2
    # The resumed model call saw the whole history, then the rebuilt turn.
    resumed_call = seen[-1]
    assert [m.content for m in resumed_call[:2]] == ["old 0", "old 1"]
    assert len(resumed_call) == 200 + 2 + 3
