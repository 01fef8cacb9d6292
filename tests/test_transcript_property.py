"""Property: whatever rounds a model asks for and however people answer, the
transcript is one a strict provider accepts.

Strict means: every assistant tool call is answered by exactly one tool message,
those tool messages come as one block right after their assistant message, and
no tool message answers a call that was not made. It is checked on every list
of messages the model is sent and on the history the session publishes, for
random rounds of 1-5 calls with interactions at any position, every kind of
answer, and second (and third) pauses after a resume.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from symfonic import SymfonicAgent, interaction
from symfonic.core.messages import messages_of
from symfonic.testing import ScriptedChatModel, calls, current_turn, reply

ORDINARY, GATED, ASK, FORM = "note", "pay", "ask_human", "pick"
INTERACTIONS = {GATED, ASK, FORM}


def assert_strict(messages: Sequence[BaseMessage], where: str) -> None:
    """Fail unless ``messages`` is a transcript a strict provider accepts."""
    seen: set[str] = set()
    i = 0
    while i < len(messages):
        message = messages[i]
        assert not isinstance(message, ToolMessage), (
            f"{where}: tool message {message.tool_call_id!r} at {i} answers no call"
        )
        i += 1
        if not (isinstance(message, AIMessage) and message.tool_calls):
            continue
        ids = [str(c["id"]) for c in message.tool_calls]
        assert len(set(ids)) == len(ids), f"{where}: duplicate call ids {ids}"
        assert not seen & set(ids), f"{where}: call ids reused {sorted(seen & set(ids))}"
        seen |= set(ids)
        block: list[str] = []
        while i < len(messages) and isinstance(messages[i], ToolMessage):
            block.append(messages[i].tool_call_id)  # type: ignore[union-attr]
            i += 1
        assert sorted(block) == sorted(ids), (
            f"{where}: calls {ids} answered by {block} (each exactly once, in one block)"
        )


class Pick(BaseModel):
    choice: str


pick = interaction(FORM, "Ask the person to pick an option.", Pick)


@dataclass
class Run:
    """What one example did: model inputs, tool executions."""

    sent: list[list[BaseMessage]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    payments: list[int] = field(default_factory=list)


Round = list[str]  # the tool names of one round, in order

rounds_strategy = st.lists(
    st.lists(
        st.sampled_from([ORDINARY, ORDINARY, GATED, ASK, FORM]), min_size=1, max_size=5
    ),
    min_size=1,
    max_size=3,
)


def _model(plan: list[Round], run: Run) -> ScriptedChatModel:
    def respond(messages: list[BaseMessage]) -> AIMessage:
        run.sent.append(list(messages))
        position = sum(isinstance(message, AIMessage) for message in current_turn(messages))
        if position >= len(plan):
            return reply(f"done after {position} rounds")
        return calls(
            *(
                (name, _args(name, position, j), f"r{position}c{j}")
                for j, name in enumerate(plan[position])
            )
        )

    return ScriptedChatModel(respond=respond)


def _args(name: str, position: int, j: int) -> dict[str, Any]:
    if name == ORDINARY:
        return {"text": f"n{position}.{j}"}
    if name == GATED:
        return {"amount": 100 * position + j}
    return {"question": f"q{position}.{j}?"}


def _answer(data: st.DataObject, kind: str) -> tuple[Any, str]:
    """An answer valid for ``kind``, and its status."""
    if data.draw(st.integers(0, 5), label="cancel?") == 0:
        return None, "cancelled"
    if kind == "approval":
        decision = data.draw(st.sampled_from(["approve", "edit", "reject"]), label="decision")
        if decision == "edit":
            amount = data.draw(st.integers(1, 99), label="edited amount")
            return {"decision": "edit", "args": {"amount": amount}}, "resolved"
        if decision == "reject":
            return {"decision": "reject", "reason": "too much"}, "resolved"
        return {"decision": "approve"}, "resolved"
    if kind == "form":
        return {"choice": data.draw(st.sampled_from(["a", "b"]), label="choice")}, "resolved"
    return data.draw(st.text(min_size=0, max_size=12), label="free answer"), "resolved"


def _expected_first_interaction(round_: Round) -> int | None:
    for j, name in enumerate(round_):
        if name in INTERACTIONS:
            return j
    return None


async def _example(url: str, plan: list[Round], data: st.DataObject) -> None:
    run = Run()

    def note(text: str) -> str:
        """Write a note."""
        run.notes.append(text)
        return f"noted {text}"

    def pay(amount: int) -> str:
        """Pay an amount."""
        run.payments.append(amount)
        return f"paid {amount}"

    expected_notes: list[str] = []
    expected_payments: list[int] = []
    agent = SymfonicAgent(
        model=_model(plan, run), tools=[note, pay], approval={GATED},
        interactions=[pick], store=url,
    )
    async with agent:
        result = await agent.run("go")
        for position, round_ in enumerate(plan):
            stop = _expected_first_interaction(round_)
            if stop is None:
                expected_notes += [f"n{position}.{j}" for j in range(len(round_))]
                continue
            assert result.status == "paused" and result.pause is not None, result
            assert result.pause.tool_call_id == f"r{position}c{stop}"
            answer, status = _answer(data, result.pause.kind.value)
            if round_[stop] == GATED and status == "resolved":
                if answer["decision"] == "approve":
                    expected_payments.append(100 * position + stop)
                elif answer["decision"] == "edit":
                    expected_payments.append(answer["args"]["amount"])
            result = await agent.resume(result.pause.token, answer, status=status)  # type: ignore[arg-type]
        assert result.status == "complete", result
        assert result.answer == f"done after {len(plan)} rounds"
        assert result.revision == 1
        history = messages_of(await agent.store.history(result.session_id, result.revision))
    assert_strict(history, "published history")
    assert isinstance(history[0], HumanMessage) and isinstance(history[-1], AIMessage)
    assert sum(isinstance(m, AIMessage) for m in history) == len(plan) + 1
    for i, sent in enumerate(run.sent):
        assert_strict(sent, f"model call {i}")
    # A paused round ran nothing but the answered gate; other rounds ran everything.
    assert run.notes == expected_notes
    assert run.payments == expected_payments


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(plan=rounds_strategy, data=st.data())
def test_every_transcript_is_one_a_strict_provider_accepts(
    plan: list[Round], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{Path(directory) / 'symfonic.db'}"
        anyio.run(_example, url, plan, data)


def test_the_checker_rejects_what_strict_providers_reject() -> None:
    call_ab = AIMessage(
        content="",
        tool_calls=[
            {"id": "a", "name": "x", "args": {}, "type": "tool_call"},
            {"id": "b", "name": "x", "args": {}, "type": "tool_call"},
        ],
    )
    ok = [HumanMessage("hi"), call_ab, ToolMessage("1", tool_call_id="b"),
          ToolMessage("2", tool_call_id="a"), AIMessage("done")]
    assert_strict(ok, "ok")
    bad = {
        "unanswered": [HumanMessage("hi"), call_ab, ToolMessage("1", tool_call_id="a")],
        "answered twice": [HumanMessage("hi"), call_ab, ToolMessage("1", tool_call_id="a"),
                           ToolMessage("1", tool_call_id="a"), ToolMessage("2", tool_call_id="b")],
        "orphan": [HumanMessage("hi"), ToolMessage("1", tool_call_id="z")],
        "not contiguous": [HumanMessage("hi"), call_ab, ToolMessage("1", tool_call_id="a"),
                           HumanMessage("?"), ToolMessage("2", tool_call_id="b")],
        "dangling": [HumanMessage("hi"), call_ab],
    }
    for name, messages in bad.items():
        try:
            assert_strict(messages, name)
        except AssertionError:
            continue
        raise AssertionError(f"the checker accepted a transcript that is {name}")
