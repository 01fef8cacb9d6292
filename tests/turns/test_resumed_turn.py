"""``ResumedTurn``: what a resumed turn publishes, and what it settles when it cannot.

The answer comes from the kernel's raw done result through ``answer_of_result``;
an unusable result publishes nothing. After a won claim, every failure that
published nothing -- an error, a late revision conflict, a disconnect, a
cancellation -- leaves the pause ``abandoned``, through a shielded, idempotent
release that never makes it redeemable again.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import anyio
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from symfonic import BudgetRefused, PauseAbandoned, Quota, SymfonicAgent
from symfonic.agent.fastapi.shared_resume_turn import ResumedTurn
from symfonic.core.contracts.errors import UnusableFinal
from symfonic.core.contracts.store import Claim
from symfonic.core.contracts.types import (
    KernelDone,
    KernelResult,
    PauseState,
    ResponseCompleteEvent,
    StopReason,
    TurnResult,
    TurnStartedEvent,
)
from symfonic.testing import ScriptedChatModel, call, reply
from symfonic.turns.budget import IssuerScope

pytestmark = pytest.mark.anyio

APPROVE = {"decision": "approve"}


class Flow:
    """A payment agent whose model and tool a test can make misbehave."""

    def __init__(self) -> None:
        self.model_fails = False
        self.sent: list[int] = []
        self.during_tool: Any = None

    def respond(self, messages: list[BaseMessage]) -> Any:
        if isinstance(messages[-1], HumanMessage):
            return call("send_payment", {"amount": 5}, id="pay")
        if self.model_fails:
            raise RuntimeError("the provider went away")
        assert isinstance(messages[-1], ToolMessage)
        return reply(f"done: {messages[-1].content}")

    async def send_payment(self, amount: int) -> str:
        """Send money."""
        if self.during_tool is not None:
            await self.during_tool()
        self.sent.append(amount)
        return f"sent {amount}"

    def agent(self, url: str, **options: Any) -> SymfonicAgent:
        return SymfonicAgent(
            model=ScriptedChatModel(respond=self.respond), tools=[self.send_payment],
            approval={"send_payment"}, store=url, **options,
        )


class Paid(NamedTuple):
    """A payment paused for approval, on an open agent of ``flow``."""

    flow: Flow
    agent: SymfonicAgent
    paused: TurnResult


@pytest.fixture
async def paid(store_url: str) -> AsyncIterator[Paid]:
    flow = Flow()
    async with flow.agent(store_url) as agent:
        paused = await agent.run("pay")
        assert paused.pause is not None
        yield Paid(flow, agent, paused)


async def _state(agent: SymfonicAgent, pause_id: str) -> PauseState:
    pause = await agent.store.get_pause(pause_id)
    assert pause is not None
    return pause.state


async def _claimed_turn(agent: SymfonicAgent, paused: TurnResult) -> ResumedTurn:
    """Claim ``paused`` by hand, as the resume path does, and wrap it."""
    assert paused.pause is not None
    pause = await agent.store.get_pause(paused.pause.pause_id)
    assert pause is not None
    now = datetime.now(UTC)
    claim_id = uuid.uuid4().hex
    won = await agent.store.claim_pause(
        Claim(
            pause.pause_id, claim_id, "local", APPROVE, "resolved", now,
            now + timedelta(seconds=60),
        )
    )
    assert won
    turn = ResumedTurn(
        agent.settlement, "local", pause.session_id, IssuerScope(pause.principal, pause.agent),
        claim_id,
    )
    turn.claimed = True
    return turn


def _done(reason: StopReason, answer: str = "") -> KernelDone:
    messages = (HumanMessage("pay"), AIMessage(answer))
    return KernelDone(KernelResult(reason, messages, answer, rounds=1, model_calls=2))


async def test_release_is_idempotent_and_never_makes_the_pause_redeemable(paid: Paid) -> None:
    flow, agent, paused = paid
    turn = await _claimed_turn(agent, paused)
    abandons: list[str] = []
    settlement = agent.settlement
    real_abandon = settlement.abandon

    async def counting(session_id: str, claim_id: str, failure: object = None) -> bool:
        abandons.append(claim_id)
        return await real_abandon(session_id, claim_id)

    settlement.abandon = counting  # type: ignore[method-assign]
    await turn.release()
    await turn.release()
    assert abandons == [turn.claim_id]
    assert await _state(agent, paused.pause.pause_id) is PauseState.ABANDONED
    with pytest.raises(PauseAbandoned):
        await agent.resume(paused.pause.token, APPROVE)
    assert flow.sent == []


async def test_release_from_a_cancelled_scope_still_abandons(paid: Paid) -> None:
    _, agent, paused = paid
    turn = await _claimed_turn(agent, paused)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await turn.release()
    assert paused.pause is not None
    assert await _state(agent, paused.pause.pause_id) is PauseState.ABANDONED


async def test_release_without_a_won_claim_or_after_settling_does_nothing(paid: Paid) -> None:
    _, agent, paused = paid
    pause = await agent.store.get_pause(paused.pause.pause_id)
    assert pause is not None
    scope = IssuerScope(pause.principal, pause.agent)
    lost = ResumedTurn(agent.settlement, "local", pause.session_id, scope, uuid.uuid4().hex)
    await lost.release()
    assert await _state(agent, pause.pause_id) is PauseState.PENDING

    turn = await _claimed_turn(agent, paused)
    admitted = turn.admission(budgeted=False)(agent, scope)
    assert admitted.plan is None
    admitted.observe(_done(StopReason.FINAL, "the real answer"))
    # The published answer is the raw result's, not the projected frame's.
    await turn.settle(ResponseCompleteEvent(answer="projected text"))
    assert turn.settled and turn.revision == 1
    await turn.release()
    published = await agent.store.get_pause(pause.pause_id)
    assert published is not None and published.state is PauseState.PUBLISHED
    assert published.outcome == {"status": "complete", "answer": "the real answer"}
    history = await agent.store.history(pause.session_id, 1)
    assert history[-1]["content"] == "the real answer"


UNUSABLE: list[tuple[KernelDone | None, str]] = [
    (None, "(no kernel result: refused, whatever the code)"),
    (_done(StopReason.TOOL_LIMIT), "tool_limit"),
    (_done(StopReason.FINAL, "  "), "empty_answer"),
    (_done(StopReason.BUDGET), "budget_exhausted"),
]


async def test_an_unusable_final_publishes_nothing(store_url: str) -> None:
    flow = Flow()
    async with flow.agent(store_url) as agent:
        for done, code in UNUSABLE:
            paused = await agent.run("pay")
            assert paused.pause is not None
            turn = await _claimed_turn(agent, paused)
            admitted = turn.admission(budgeted=True)(agent, turn._scope)
            assert admitted.plan == agent.limits
            if done is not None:
                admitted.observe(done)
            with pytest.raises(UnusableFinal) as raised:
                await turn.settle(ResponseCompleteEvent(answer="looks fine"))
            if done is not None:
                assert raised.value.error_code == code
            assert not turn.settled
            await turn.release()
            assert await _state(agent, paused.pause.pause_id) is PauseState.ABANDONED
            session = await agent.store.get_session(paused.session_id)
            assert session is not None and session.revision == 0


async def test_admission_runs_the_budget_before_the_claim(store_url: str) -> None:
    flow = Flow()
    quota = Quota(turns=1, per_seconds=3600)
    async with flow.agent(store_url, quota=quota) as agent:
        paused = await agent.run("pay")  # uses the one turn
        assert paused.pause is not None
        turn = ResumedTurn(
            agent.settlement, "local", paused.session_id, IssuerScope("local", agent.name), "c"
        )
        with pytest.raises(BudgetRefused):
            turn.admission(budgeted=True)(agent, IssuerScope("local", agent.name))
        # Unbudgeted admission never refuses.
        turn.admission(budgeted=False)(agent, IssuerScope("local", agent.name))


async def test_a_model_failure_after_the_claim_leaves_the_pause_abandoned(paid: Paid) -> None:
    flow, agent, paused = paid
    flow.model_fails = True
    failed = await agent.resume(paused.pause.token, APPROVE)
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.code == "model_error"
    assert await _state(agent, paused.pause.pause_id) is PauseState.ABANDONED
    session = await agent.store.get_session(paused.session_id)
    assert session is not None and session.revision == 0
    flow.model_fails = False
    with pytest.raises(PauseAbandoned):
        await agent.resume(paused.pause.token, APPROVE)


async def test_a_late_revision_conflict_publishes_nothing_and_abandons(paid: Paid) -> None:
    flow, agent, paused = paid
    async def someone_else_publishes() -> None:
        await agent.seed_history(paused.session_id, [{"role": "human", "content": "x"}])

    flow.during_tool = someone_else_publishes
    failed = await agent.resume(paused.pause.token, APPROVE)
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.code == "revision_conflict"
    assert await _state(agent, paused.pause.pause_id) is PauseState.ABANDONED
    history = await agent.store.history(paused.session_id, 99)
    assert history == [{"role": "human", "content": "x"}]


async def test_a_client_that_stops_reading_after_started_abandons(paid: Paid) -> None:
    flow, agent, paused = paid
    stream = agent.resume_stream(paused.pause.token, APPROVE)
    assert isinstance(await anext(stream), TurnStartedEvent)
    assert await _state(agent, paused.pause.pause_id) is PauseState.CLAIMED
    await stream.aclose()  # type: ignore[attr-defined]
    assert await _state(agent, paused.pause.pause_id) is PauseState.ABANDONED
    assert flow.sent == []
    session = await agent.store.get_session(paused.session_id)
    assert session is not None and session.revision == 0


async def test_a_cancelled_resume_abandons(paid: Paid) -> None:
    flow, agent, paused = paid
    entered = anyio.Event()

    async def hang() -> None:
        entered.set()
        await anyio.sleep_forever()

    flow.during_tool = hang
    async with anyio.create_task_group() as group:
        group.start_soon(agent.resume, paused.pause.token, APPROVE)
        await entered.wait()
        group.cancel_scope.cancel()
    assert await _state(agent, paused.pause.pause_id) is PauseState.ABANDONED
    assert flow.sent == []
