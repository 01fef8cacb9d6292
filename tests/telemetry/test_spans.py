"""Traces and metrics of a pause and its resume, read from the SDK's in-memory exporters.

A pause made by one agent and resumed by another (a worker that never saw it)
on the same store gives the documented spans and attributes, and the resume's
span links to the span of the turn that paused, across the two traces. A lost
race shows as ``already_claimed``, an expired pause as the sweeper's expiry.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext

from http_support import Clock
from otel_support import Recorded, attributes, children, otel
from symfonic import PauseAlreadyClaimed, PauseExpired, SymfonicAgent
from symfonic.core.telemetry import names
from symfonic.server.service.pending_pauses_gauge import PendingPauses
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio
__all__ = ["otel"]  # the fixture, used by name


def _model() -> ScriptedChatModel:
    def respond(messages: list[BaseMessage]) -> Any:
        if isinstance(messages[-1], HumanMessage):
            return call("send_payment", {"amount": 5, "to": "bob"}, id="pay")
        assert isinstance(messages[-1], ToolMessage)
        return reply("Paid bob 5.")

    return ScriptedChatModel(respond=respond)


def _agent(store_url: str, name: str, **options: Any) -> SymfonicAgent:
    def send_payment(amount: int, to: str) -> str:
        """Send money."""
        return f"sent {amount} to {to}"

    return SymfonicAgent(
        name=name, model=_model(), tools=[send_payment], approval={"send_payment"},
        store=store_url, **options,
    )


def _ids(context: SpanContext | None) -> tuple[int, int]:
    assert context is not None
    return context.trace_id, context.span_id


def _linked(span: ReadableSpan) -> list[tuple[int, int]]:
    return [_ids(link.context) for link in span.links]


async def test_a_pause_and_its_resume_on_another_agent_are_traced_and_linked(
    store_url: str, otel: Recorded
) -> None:
    async with _agent(store_url, "billing") as first:
        paused = await first.run("pay bob 5", principal="alice")
    assert paused.pause is not None
    async with _agent(store_url, "billing") as second:
        done = await second.resume(paused.pause.token, {"decision": "approve"}, principal="alice")
    assert done.status == "complete"
    spans = otel.finished()

    # The turn that paused and the resume that answered name the same pause.
    of_the_pause = {
        names.AGENT: "billing",
        names.PRINCIPAL: "alice",
        names.SESSION_ID: paused.session_id,
        names.PAUSE_ID: paused.pause.pause_id,
        names.INTERACTION_KIND: "approval",
    }
    [turn] = otel.named(names.TURN)
    assert attributes(turn) == {**of_the_pause, names.OUTCOME: "paused"}
    under_turn = {span.name for span in children(turn, spans)}
    assert {names.PAUSE, "chat", names.STORE_PREFIX + "begin_run"} <= under_turn
    [pause] = otel.named(names.PAUSE)
    assert attributes(pause)[names.PAUSE_ID] == paused.pause.pause_id
    assert attributes(pause)[names.INTERACTION_KIND] == "approval"
    [chat, _] = otel.named("chat")
    assert attributes(chat)[names.GEN_AI_OPERATION] == "chat"

    [resume] = otel.named(names.RESUME)
    assert attributes(resume) == {
        **of_the_pause, names.CLAIM_RESULT: "won", names.OUTCOME: "complete"
    }
    assert resume.context is not None and turn.context is not None
    assert resume.context.trace_id != turn.context.trace_id  # another request, another trace
    assert _linked(resume) == [_ids(turn.context)]
    under_resume = {span.name: span for span in children(resume, spans)}
    expected = {names.CLAIM, names.REHYDRATE, "execute_tool send_payment", names.PUBLISH, "chat"}
    assert expected <= set(under_resume)
    claim = under_resume[names.CLAIM]
    assert attributes(claim)[names.CLAIM_RESULT] == "won"
    assert _linked(claim) == [_ids(turn.context)]
    tool = under_resume["execute_tool send_payment"]
    assert attributes(tool)[names.TOOL_NAME] == "send_payment"
    assert attributes(tool)[names.TOOL_STATUS] == "ok"
    assert otel.total(names.TIME_TO_ANSWER, **{names.AGENT: "billing"}) >= 1
    assert otel.total(names.TURN_DURATION, **{names.AGENT: "billing"}) >= 2


async def test_a_lost_race_shows_as_already_claimed(store_url: str, otel: Recorded) -> None:
    agent = _agent(store_url, "racing")
    async with agent:
        paused = await agent.run("pay bob 5")
        assert paused.pause is not None
        token = paused.pause.token
        before = otel.total(names.CLAIM_CONFLICTS, **{names.AGENT: "racing"})
        winner = agent.resume_stream(token, {"decision": "approve"})
        await anext(winner)  # the claim is won and the turn is running
        with pytest.raises(PauseAlreadyClaimed):
            await agent.resume(token, {"decision": "reject", "reason": "no"})
        async for _ in winner:
            pass
    results = [attributes(span)[names.CLAIM_RESULT] for span in otel.named(names.RESUME)]
    assert sorted(results) == ["already_claimed", "won"]
    [lost] = [s for s in otel.named(names.RESUME)
              if attributes(s)[names.CLAIM_RESULT] == "already_claimed"]
    assert attributes(lost)[names.OUTCOME] == "refused"
    assert attributes(lost)[names.ERROR_CODE] == "already_claimed"
    assert otel.total(names.CLAIM_CONFLICTS, **{names.AGENT: "racing"}) == before + 1
    assert otel.total(names.RESUMES, **{names.AGENT: "racing", names.CLAIM_RESULT:
                                        "already_claimed"}) >= 1


async def test_an_expired_pause_counts_as_the_sweepers_expiry(
    store_url: str, otel: Recorded
) -> None:
    clock = Clock()
    agent = _agent(store_url, "expiring", clock=clock, pause_ttl=60)
    before = otel.total(names.SWEEPER_ACTIONS, **{names.SWEEP_ACTION: "expired"})
    async with agent:
        paused = await agent.run("pay bob 5")
        assert paused.pause is not None
        clock.advance(61)
        with pytest.raises(PauseExpired):
            await agent.resume(paused.pause.token, {"decision": "approve"})
        report = await agent.sweep()
    assert report.expired == 1
    assert otel.total(names.SWEEPER_ACTIONS, **{names.SWEEP_ACTION: "expired"}) == before + 1
    [resume] = otel.named(names.RESUME)
    assert attributes(resume)[names.CLAIM_RESULT] == "expired"


@pytest.fixture(scope="module")
def gauge() -> PendingPauses:
    """One gauge per process, as under ``symfonic serve``: the SDK keeps the first
    instrument of a name, and its callback."""
    counted = PendingPauses()
    counted.register()
    return counted


async def test_the_pending_gauge_counts_what_waits_by_agent_and_kind(
    store_url: str, otel: Recorded, gauge: PendingPauses
) -> None:
    async with _agent(store_url, "gauged") as agent:
        first = await agent.run("pay bob 5")
        await agent.run("pay bob 5")
        await gauge.refresh(agent.store)
        labels = {names.AGENT: "gauged", names.INTERACTION_KIND: "approval"}
        assert _gauge(otel, labels) == 2
        assert first.pause is not None
        await agent.resume(first.pause.token, {"decision": "approve"})
        await gauge.refresh(agent.store)
        assert _gauge(otel, labels) == 1


def _gauge(otel: Recorded, labels: dict[str, str]) -> float:
    values = [point.value for point in otel.points(names.PAUSES_PENDING)
              if dict(point.attributes) == labels]
    assert values, "the gauge reported nothing for these labels"
    return float(values[-1])


async def test_a_failed_resume_is_abandoned_traced_and_logged(
    store_url: str, otel: Recorded, caplog: pytest.LogCaptureFixture
) -> None:
    def respond(messages: list[BaseMessage]) -> Any:
        if isinstance(messages[-1], HumanMessage):
            return call("send_payment", {"amount": 5, "to": "bob"}, id="pay")
        raise ConnectionError("the provider is out of reach")

    def send_payment(amount: int, to: str) -> str:
        """Send money."""
        return "sent"

    agent = SymfonicAgent(name="failing", model=ScriptedChatModel(respond=respond),
                          tools=[send_payment], approval={"send_payment"}, store=store_url)
    caplog.set_level(logging.INFO, logger="symfonic.pauses")
    async with agent:
        paused = await agent.run("pay bob 5", principal="alice")
        assert paused.pause is not None
        failed = await agent.resume(paused.pause.token, {"decision": "approve"}, principal="alice")
    assert failed.error is not None and failed.error.code == "model_error"
    [resume] = otel.named(names.RESUME)
    assert attributes(resume)[names.OUTCOME] == "failed"
    assert attributes(resume)[names.ERROR_CODE] == "model_error"
    [abandon] = otel.named(names.ABANDON)
    assert abandon.parent is not None and resume.context is not None
    assert abandon.parent.span_id == resume.context.span_id
    assert attributes(abandon)[names.PAUSE_ID] == paused.pause.pause_id
    [chat] = [span for span in children(resume, otel.finished()) if span.name == "chat"]
    assert attributes(chat)["error.type"] == "ModelError"
    states = [record.symfonic["state"] for record in caplog.records  # type: ignore[attr-defined]
              if record.name == "symfonic.pauses"]
    assert states == ["pending", "claimed", "abandoned"]
    # The provider's words stay out: a failed span says its error's type or code.
    assert all("out of reach" not in str(span.status.description) for span in otel.finished())
