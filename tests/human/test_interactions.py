"""The three kinds of interaction, answered every way a person can answer them.

An approval runs the gated tool exactly once on approve (original arguments) or
edit (the person's arguments), never on reject, and says why it did not run; a
cancelled answer of any kind tells the model the person declined, and the turn
goes on. A pause stops the whole round before anything in it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import BaseModel, Field

from symfonic import SymfonicAgent, interaction
from symfonic.agent.cutover.rehydration import NOT_DISPATCHED
from symfonic.capabilities.human.answers import DECLINED, validate_answer
from symfonic.capabilities.human.interactions import approval_schema
from symfonic.core.contracts.types import (
    InteractionKind,
    PauseState,
    ToolResultEvent,
    TurnResult,
)
from symfonic.testing import ScriptedChatModel, call, calls, reply

pytestmark = pytest.mark.anyio


@dataclass
class Bank:
    """The side effects a test watches, and what the model was sent."""

    sent: list[dict[str, Any]] = field(default_factory=list)
    looked_up: list[str] = field(default_factory=list)
    seen: list[list[BaseMessage]] = field(default_factory=list)

    def send_payment(self, amount: int, to: str) -> str:
        """Send money to someone."""
        self.sent.append({"amount": amount, "to": to})
        return f"sent {amount} to {to}"

    def lookup(self, name: str) -> str:
        """Look a contact up."""
        self.looked_up.append(name)
        return f"{name} is a contact"


def _observations(messages: list[BaseMessage]) -> dict[str, str]:
    return {m.tool_call_id: str(m.content) for m in messages if isinstance(m, ToolMessage)}


def _echo_model(bank: Bank, first: AIMessage) -> ScriptedChatModel:
    """Asks for ``first``, then answers with every observation it was given."""

    def respond(messages: list[BaseMessage]) -> AIMessage:
        bank.seen.append(list(messages))
        if isinstance(messages[-1], HumanMessage):
            return first
        seen = _observations(messages)
        return reply(" | ".join(f"{k}={v}" for k, v in sorted(seen.items())))

    return ScriptedChatModel(respond=respond)


async def _agent(url: str, bank: Bank, first: AIMessage, **options: Any) -> SymfonicAgent:
    agent = SymfonicAgent(
        model=_echo_model(bank, first),
        tools=[bank.send_payment, bank.lookup],
        approval={"send_payment"},
        store=url,
        **options,
    )
    await agent.open()
    return agent


@pytest.fixture
def bank() -> Bank:
    return Bank()


PAY = call("send_payment", {"amount": 5, "to": "bob"}, id="pay_1")


async def _history(agent: SymfonicAgent, result: TurnResult) -> list[dict[str, Any]]:
    return await agent.store.history(result.session_id, result.revision)


async def test_approve_runs_the_gated_tool_once_with_its_arguments(
    store_url: str, bank: Bank
) -> None:
    agent = await _agent(store_url, bank, PAY)
    try:
        paused = await agent.run("pay bob 5")
        assert paused.status == "paused" and paused.pause is not None
        assert paused.pause.kind is InteractionKind.APPROVAL
        assert paused.pause.tool_call_id == "pay_1"
        assert paused.pause.query == "Approve send_payment?"
        assert bank.sent == []
        done = await agent.resume(paused.pause.token, {"decision": "approve"})
        assert done.status == "complete"
        assert bank.sent == [{"amount": 5, "to": "bob"}]
        assert done.answer == "pay_1=sent 5 to bob"
        results = [e for e in done.events if isinstance(e, ToolResultEvent)]
        assert [(r.tool_call_id, r.status, r.content) for r in results] == [
            ("pay_1", "ok", "sent 5 to bob")
        ]
        history = await _history(agent, done)
        assert [b["role"] for b in history] == ["human", "ai", "tool", "ai"]
        assert history[2]["content"] == "sent 5 to bob"
        # The identical answer again replays; nothing runs twice.
        again = await agent.resume(paused.pause.token, {"decision": "approve"})
        assert (again.status, again.answer, again.revision) == ("complete", done.answer, 1)
        assert len(bank.sent) == 1
    finally:
        await agent.aclose()


async def test_edit_runs_the_gated_tool_with_the_edited_arguments(
    store_url: str, bank: Bank
) -> None:
    agent = await _agent(store_url, bank, PAY)
    try:
        paused = await agent.run("pay bob 5")
        assert paused.pause is not None
        done = await agent.resume(
            paused.pause.token, {"decision": "edit", "args": {"amount": 3, "to": "carol"}}
        )
        assert done.status == "complete"
        assert bank.sent == [{"amount": 3, "to": "carol"}]
        observation = _observations(bank.seen[-1])["pay_1"]
        assert "edited by the person" in observation
        assert observation.endswith("sent 3 to carol")
    finally:
        await agent.aclose()


async def test_reject_never_runs_the_tool_and_says_why(store_url: str, bank: Bank) -> None:
    agent = await _agent(store_url, bank, PAY)
    try:
        paused = await agent.run("pay bob 5")
        assert paused.pause is not None
        done = await agent.resume(
            paused.pause.token, {"decision": "reject", "reason": "bob was paid yesterday"}
        )
        assert done.status == "complete"
        assert bank.sent == []
        observation = _observations(bank.seen[-1])["pay_1"]
        assert "rejected" in observation and "bob was paid yesterday" in observation
        results = [e for e in done.events if isinstance(e, ToolResultEvent)]
        assert [r.status for r in results] == ["rejected"]
    finally:
        await agent.aclose()


async def test_cancelled_says_the_person_declined_and_the_turn_goes_on(
    store_url: str, bank: Bank
) -> None:
    class Choice(BaseModel):
        option: str

    firsts = {
        "approval": PAY,
        "input": call("ask_human", {"question": "which account?"}, id="q_1"),
        "form": call("choose", {"question": "pick"}, id="q_1"),
    }
    for kind, first in firsts.items():
        agent = await _agent(
            store_url, bank, first, interactions=[interaction("choose", "Choose.", Choice)]
        )
        try:
            paused = await agent.run("do it")
            assert paused.pause is not None and paused.pause.kind.value == kind
            done = await agent.resume(paused.pause.token, None, status="cancelled")
            assert done.status == "complete" and done.revision == 1
            assert bank.sent == []
            assert list(_observations(bank.seen[-1]).values()) == [DECLINED]
            pause = await agent.store.get_pause(paused.pause.pause_id)
            assert pause is not None and pause.answer_status == "cancelled"
        finally:
            await agent.aclose()


async def test_ask_human_takes_a_string_answer(sqlite_url: str, bank: Bank) -> None:
    agent = await _agent(sqlite_url, bank, call("ask_human", {"question": "Which bob?"}, id="q"))
    try:
        paused = await agent.run("pay bob")
        assert paused.pause is not None
        assert paused.pause.kind is InteractionKind.INPUT
        assert paused.pause.query == "Which bob?"
        assert paused.pause.response_schema == {"type": "string"}
        done = await agent.resume(paused.pause.token, "Bob Smith")
        assert done.answer == "q=Bob Smith"
    finally:
        await agent.aclose()


async def test_a_form_is_answered_with_data_valid_against_its_schema(
    sqlite_url: str, bank: Bank
) -> None:
    class Address(BaseModel):
        street: str
        number: int = Field(ge=1)

    agent = await _agent(
        sqlite_url, bank, call("address", {"question": "Where to?"}, id="f"),
        interactions=[interaction("address", "Ask for a postal address.", Address)],
    )
    try:
        paused = await agent.run("ship it")
        assert paused.pause is not None
        assert paused.pause.kind is InteractionKind.FORM
        assert paused.pause.response_schema == Address.model_json_schema()
        done = await agent.resume(paused.pause.token, {"street": "Main", "number": 4})
        assert done.answer == 'f={"number": 4, "street": "Main"}'
    finally:
        await agent.aclose()


async def test_a_pause_stops_the_whole_round_before_anything_runs(
    store_url: str, bank: Bank
) -> None:
    first = calls(
        ("lookup", {"name": "bob"}, "look_1"),
        ("send_payment", {"amount": 5, "to": "bob"}, "pay_1"),
        ("lookup", {"name": "carol"}, "look_2"),
    )
    agent = await _agent(store_url, bank, first)
    try:
        paused = await agent.run("pay bob")
        assert paused.pause is not None and paused.pause.tool_call_id == "pay_1"
        assert bank.looked_up == [] and bank.sent == []
        done = await agent.resume(paused.pause.token, {"decision": "approve"})
        assert bank.looked_up == []
        assert bank.sent == [{"amount": 5, "to": "bob"}]
        observed = _observations(bank.seen[-1])
        assert observed == {
            "look_1": NOT_DISPATCHED,
            "pay_1": "sent 5 to bob",
            "look_2": NOT_DISPATCHED,
        }
        statuses = {
            e.tool_call_id: e.status for e in done.events if isinstance(e, ToolResultEvent)
        }
        assert statuses == {"pay_1": "ok", "look_1": "not_dispatched", "look_2": "not_dispatched"}
    finally:
        await agent.aclose()


async def test_two_interactions_in_one_round_pause_at_the_first(
    store_url: str, bank: Bank
) -> None:
    first = calls(
        ("ask_human", {"question": "first?"}, "q_1"),
        ("send_payment", {"amount": 5, "to": "bob"}, "pay_1"),
    )
    agent = await _agent(store_url, bank, first)
    try:
        paused = await agent.run("go")
        assert paused.pause is not None and paused.pause.tool_call_id == "q_1"
        done = await agent.resume(paused.pause.token, "yes")
        assert done.status == "complete"
        assert bank.sent == []
        assert _observations(bank.seen[-1]) == {"q_1": "yes", "pay_1": NOT_DISPATCHED}
    finally:
        await agent.aclose()


async def test_who_answered_when_and_with_what_is_recorded(store_url: str, bank: Bank) -> None:
    agent = await _agent(store_url, bank, PAY)
    try:
        paused = await agent.run("pay bob 5", principal="alice")
        assert paused.pause is not None
        before = agent.clock()
        await agent.resume(paused.pause.token, {"decision": "approve"}, principal="alice")
        pause = await agent.store.get_pause(paused.pause.pause_id)
        assert pause is not None
        assert pause.state is PauseState.PUBLISHED
        assert pause.answered_by == "alice"
        assert pause.answer == {"decision": "approve"}
        assert pause.answer_status == "resolved"
        assert pause.answered_at is not None and pause.answered_at >= before.replace(microsecond=0)
        assert pause.outcome == {"status": "complete", "answer": "pay_1=sent 5 to bob"}
    finally:
        await agent.aclose()


async def test_an_approval_audience_decides_who_may_approve(store_url: str, bank: Bank) -> None:
    from symfonic import PauseForbidden, Principal

    agent = SymfonicAgent(
        model=_echo_model(bank, PAY),
        tools=[bank.send_payment, bank.lookup],
        approval={"send_payment": "approver"},
        store=store_url,
    )
    async with agent:
        paused = await agent.run("pay bob 5", principal="alice")
        assert paused.pause is not None
        with pytest.raises(PauseForbidden):
            await agent.resume(paused.pause.token, {"decision": "approve"}, principal="alice")
        listed = await agent.pauses(Principal("carol", frozenset({"approver"})))
        assert [p.pause_id for p in listed] == [paused.pause.pause_id]
        assert await agent.pauses("alice") == []
        done = await agent.resume(
            paused.pause.token, {"decision": "approve"},
            principal=Principal("carol", frozenset({"approver"})),
        )
        assert done.status == "complete" and bank.sent == [{"amount": 5, "to": "bob"}]


async def test_answers_are_validated_against_the_declared_schema(
    store_url: str, bank: Bank
) -> None:
    from symfonic import InvalidAnswer

    size = interaction(
        "size",
        "Ask for a T-shirt size.",
        {"type": "object", "properties": {"size": {"enum": ["S", "M"]}}, "required": ["size"]},
    )
    agent = await _agent(
        store_url, bank, call("size", {"question": "Size?"}, id="s"), interactions=[size]
    )
    try:
        paused = await agent.run("order")
        assert paused.pause is not None
        assert paused.pause.response_schema["required"] == ["size"]
        for wrong in ({"size": "XL"}, {}, "M", 42):
            with pytest.raises(InvalidAnswer):
                await agent.resume(paused.pause.token, wrong)
        done = await agent.resume(paused.pause.token, {"size": "M"})
        assert done.answer == 's={"size": "M"}'
    finally:
        await agent.aclose()


async def test_a_free_text_question_wants_a_string(sqlite_url: str, bank: Bank) -> None:
    from symfonic import InvalidAnswer

    agent = await _agent(sqlite_url, bank, call("ask_human", {"question": "Name?"}, id="q"))
    try:
        paused = await agent.run("go")
        assert paused.pause is not None
        for wrong in (42, {"name": "x"}, None):
            with pytest.raises(InvalidAnswer):
                await agent.resume(paused.pause.token, wrong)
        assert (await agent.resume(paused.pause.token, "")).status == "complete"
    finally:
        await agent.aclose()


# Tool parameter schemas as langchain-core writes them: typed properties, some required.
_PARAMETER_TYPES = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "array", "items": {"type": "string"}},
        {"type": "object"},
        {"enum": ["a", "b"]},
    ]
)


@st.composite
def _parameters(draw: st.DrawFn) -> dict[str, Any]:
    properties = draw(st.dictionaries(st.text(min_size=1, max_size=8), _PARAMETER_TYPES))
    names = sorted(properties)
    required = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    return {"type": "object", "properties": properties, "required": required}


@settings(max_examples=60, deadline=None)
@given(_parameters())
def test_a_plain_approval_is_what_every_approval_schema_admits(parameters: dict[str, Any]) -> None:
    """``{"decision": "approve"}`` answers every approval, whatever the tool's parameters."""
    schema = approval_schema(parameters)
    plain = {"decision": "approve"}
    assert jsonschema.Draft202012Validator(schema).is_valid(plain)
    validate_answer(schema, plain, "resolved", InteractionKind.APPROVAL)


@pytest.mark.parametrize(
    "answer",
    [
        {"decision": "approve", "note": "ok"},
        {"decision": "Approve"},
        {"decision": "edit"},
        {"decision": "reject", "reason": 3},
        {},
        "approve",
        None,
    ],
)
def test_an_approval_that_is_not_plain_is_still_checked_against_the_schema(answer: Any) -> None:
    from symfonic import InvalidAnswer

    schema = approval_schema({"type": "object", "properties": {"amount": {"type": "integer"}}})
    with pytest.raises(InvalidAnswer) as refused:
        validate_answer(schema, answer, "resolved", InteractionKind.APPROVAL)
    assert refused.value.message
