"""Racing resumes of one token: exactly one claim wins, one turn runs, one publish.

Every loser is told so: a request whose identical answer arrives while the
winner is still running gets "already claimed"; one that arrives after the
winner published gets the published outcome replayed. Either way nothing runs
twice and the session has the answer once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from symfonic import PauseAlreadyClaimed, SymfonicAgent
from symfonic.core.contracts.types import PauseInfo, PauseState, ToolResultEvent, TurnResult
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio

RACERS = 32


def _model(model_calls: list[int]) -> ScriptedChatModel:
    def respond(messages: list[BaseMessage]) -> Any:
        model_calls.append(len(messages))
        last = messages[-1]
        if isinstance(last, HumanMessage):
            return call("send_payment", {"amount": 5}, id="pay")
        assert isinstance(last, ToolMessage)
        return reply(f"done: {last.content}")

    return ScriptedChatModel(respond=respond)


async def _race(agent: SymfonicAgent, token: str, answers: list[Any]) -> list[Any]:
    outcomes: list[Any] = [None] * len(answers)

    async def one(i: int) -> None:
        try:
            outcomes[i] = await agent.resume(token, answers[i])
        except PauseAlreadyClaimed as refused:
            outcomes[i] = refused

    async with anyio.create_task_group() as group:
        for i in range(len(answers)):
            group.start_soon(one, i)
    return outcomes


@dataclass
class Payment:
    """An agent with one payment paused for approval, and what its tool and model did."""

    agent: SymfonicAgent
    pause: PauseInfo
    session_id: str
    sent: list[int] = field(default_factory=list)
    model_calls: list[int] = field(default_factory=list)


@pytest.fixture
async def payment(store_url: str) -> AsyncIterator[Payment]:
    sent: list[int] = []
    model_calls: list[int] = []

    def send_payment(amount: int) -> str:
        """Send money."""
        sent.append(amount)
        return f"sent {amount}"

    async with SymfonicAgent(
        model=_model(model_calls), tools=[send_payment], approval={"send_payment"},
        store=store_url,
    ) as agent:
        paused = await agent.run("pay")
        assert paused.pause is not None
        yield Payment(agent, paused.pause, paused.session_id, sent, model_calls)


def _ran_the_turn(result: TurnResult) -> bool:
    return any(isinstance(e, ToolResultEvent) for e in result.events)


async def test_identical_resumes_have_exactly_one_winner(payment: Payment) -> None:
    agent, sent, model_calls = payment.agent, payment.sent, payment.model_calls
    model_calls.clear()
    outcomes = await _race(agent, payment.pause.token, [{"decision": "approve"}] * RACERS)

    results = [o for o in outcomes if isinstance(o, TurnResult)]
    refused = [o for o in outcomes if isinstance(o, PauseAlreadyClaimed)]
    assert len(results) + len(refused) == RACERS
    winners = [r for r in results if _ran_the_turn(r)]
    assert len(winners) == 1
    winner = winners[0]
    assert (winner.status, winner.answer, winner.revision) == ("complete", "done: sent 5", 1)
    # Anyone else who got a result got the published outcome, replayed.
    for replayed in results:
        assert (replayed.status, replayed.answer, replayed.revision) == (
            "complete", winner.answer, 1,
        )
    assert sent == [5]
    assert len(model_calls) == 1
    history = await agent.store.history(payment.session_id, 99)
    assert [b["role"] for b in history] == ["human", "ai", "tool", "ai"]
    session = await agent.store.get_session(payment.session_id)
    assert session is not None and session.revision == 1
    pause = await agent.store.get_pause(payment.pause.pause_id)
    assert pause is not None and pause.state is PauseState.PUBLISHED


async def test_different_answers_racing_have_exactly_one_winner(payment: Payment) -> None:
    agent, sent = payment.agent, payment.sent
    answers = [{"decision": "edit", "args": {"amount": i + 1}} for i in range(RACERS)]
    outcomes = await _race(agent, payment.pause.token, answers)
    results = [o for o in outcomes if isinstance(o, TurnResult)]
    assert len(results) == 1
    assert sum(isinstance(o, PauseAlreadyClaimed) for o in outcomes) == RACERS - 1
    assert len(sent) == 1
    pause = await agent.store.get_pause(payment.pause.pause_id)
    assert pause is not None
    # The recorded answer is the winner's, and it is what ran.
    assert pause.answer == {"decision": "edit", "args": {"amount": sent[0]}}
    assert results[0].answer is not None
    assert results[0].answer.endswith(f"sent {sent[0]}")
