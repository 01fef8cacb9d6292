"""An escalation step and an operator's reassignment, each a span of its own, on both stores.

The sweep that escalates runs outside any trace, as the server's sweeper does,
and still gives one ``symfonic.escalate`` span per step applied (and none for a
sweep that applies nothing), naming the pause, the audience it left and the one
it went to, and the step, and linking to the turn that paused. A reassignment is
one ``symfonic.reassign`` span naming the operator, never the reason they wrote.
"""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from http_support import Clock
from otel_support import Recorded, attributes, otel
from symfonic import SymfonicAgent, escalation, needs_approval
from symfonic.core.contracts.principal import Principal
from symfonic.core.telemetry import names
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.reassignment import reassign
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio
__all__ = ["otel"]  # the fixture, used by name


def _agent(store_url: str, name: str, clock: Clock) -> SymfonicAgent:
    def send_payment(amount: int, to: str) -> str:
        """Send money."""
        return f"sent {amount} to {to}"

    rule = needs_approval(
        audience="approvers",
        escalate=[
            escalation(after=60, audience="team-leads"),
            escalation(after=3600, audience="cfo"),
        ],
    )
    model = ScriptedChatModel.from_script(
        [call("send_payment", {"amount": 5, "to": "bob"}, id="pay"), reply("Paid.")]
    )
    return SymfonicAgent(
        name=name,
        model=model,
        tools=[send_payment],
        approval={"send_payment": rule},
        store=store_url,
        clock=clock,
    )


def _linked_to(span: ReadableSpan, turn: ReadableSpan) -> bool:
    assert turn.context is not None
    return [(link.context.trace_id, link.context.span_id) for link in span.links] == [
        (turn.context.trace_id, turn.context.span_id)
    ]


async def test_each_escalation_step_is_a_span_linked_to_the_turn_that_paused(
    store_url: str, otel: Recorded
) -> None:
    clock = Clock()
    before = otel.total(names.SWEEPER_ACTIONS, **{names.SWEEP_ACTION: "escalated"})
    async with _agent(store_url, "escalating", clock) as agent:
        paused = await agent.run("pay bob 5", principal="alice")
        assert paused.pause is not None
        await agent.sweep()
        assert otel.named(names.ESCALATE) == []  # nothing was due
        clock.advance(61)
        assert (await agent.sweep()).escalated == 1
        clock.advance(3600)
        assert (await agent.sweep()).escalated == 1
    [turn] = otel.named(names.TURN)
    first, second = otel.named(names.ESCALATE)
    of_the_pause = {
        names.PAUSE_ID: paused.pause.pause_id,
        names.SESSION_ID: paused.session_id,
        names.AGENT: "escalating",
    }
    assert attributes(first) == {
        **of_the_pause,
        names.AUDIENCE_FROM: "approvers",
        names.AUDIENCE_TO: "team-leads",
        names.ESCALATION_STEP: 1,
        names.ESCALATION_AFTER: 60.0,
    }
    assert attributes(second) == {
        **of_the_pause,
        names.AUDIENCE_FROM: "team-leads",
        names.AUDIENCE_TO: "cfo",
        names.ESCALATION_STEP: 2,
        names.ESCALATION_AFTER: 3600.0,
    }
    # The sweeper runs outside any trace: each step starts its own, linked to the turn.
    assert first.parent is None and second.parent is None
    assert _linked_to(first, turn) and _linked_to(second, turn)
    assert otel.total(names.SWEEPER_ACTIONS, **{names.SWEEP_ACTION: "escalated"}) == before + 2


async def test_a_reassignment_is_a_span_naming_the_operator_and_never_the_reason(
    store_url: str, otel: Recorded
) -> None:
    clock = Clock()
    agent = _agent(store_url, "reassigned", clock)
    host = ServiceHost([agent])
    await host.open()
    try:
        paused = await agent.run("pay bob 5", principal="alice")
        assert paused.pause is not None
        operator = Principal("olga", frozenset({"operator"}))
        await reassign(host, operator, paused.pause.pause_id, "finance", "carol is on leave")
    finally:
        await host.aclose()
    [turn] = otel.named(names.TURN)
    [span] = otel.named(names.REASSIGN)
    assert attributes(span) == {
        names.PAUSE_ID: paused.pause.pause_id,
        names.SESSION_ID: paused.session_id,
        names.AGENT: "reassigned",
        names.AUDIENCE_FROM: "approvers",
        names.AUDIENCE_TO: "finance",
        names.PRINCIPAL: "olga",
    }
    assert _linked_to(span, turn)
    recorded = [str(value) for s in otel.finished() for value in attributes(s).values()]
    assert not any("leave" in value for value in recorded)
