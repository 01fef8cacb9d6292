"""An interrupt whose pause was escalated or reassigned, as an AG-UI front end meets it.

AG-UI has no channel to a front end between runs, so the next run that shows
the interrupt (a reloaded page) carries the hand-over in the interrupt's
``metadata``: the same interrupt id, who has it now, from whom and why, and
whether the thread's owner may still answer it. An owner who lost it and
answers anyway gets the thread's state and a sentence saying who has it:
nothing runs, and the interrupt stays open for its new audience. On both stores.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from ag_ui.core import BaseEvent, Interrupt, RunFinishedInterruptOutcome, TextMessageContentEvent

from agui_support import AguiClient, agui_app, finished, run_body, types
from symfonic import SymfonicAgent, escalation, needs_approval
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.types import PauseState
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.reassignment import reassign
from symfonic.testing import ScriptedChatModel, call, reply
from test_interrupts import (
    ANSWERED_ELSEWHERE,
    SHOWS_STATE,
    Clock,
    Service,
    _service,
    resolved,
)

pytestmark = pytest.mark.anyio

OLGA = Principal("olga", frozenset({"operator"}))


@pytest.fixture
async def svc(store_url: str) -> AsyncIterator[Service]:
    async for service in _service(store_url):
        yield service


def shown_interrupt(events: list[BaseEvent]) -> Interrupt:
    outcome = finished(events).outcome
    assert isinstance(outcome, RunFinishedInterruptOutcome)
    [interrupt] = outcome.interrupts
    return interrupt


def said(events: list[BaseEvent]) -> str:
    return "".join(e.delta for e in events if isinstance(e, TextMessageContentEvent))


async def test_a_reassigned_interrupt_says_who_has_it_and_its_old_owner_cannot_answer(
    svc: Service,
) -> None:
    thread, _, interrupt = await svc.paused()
    pause_id = (await svc.pause_row(interrupt)).pause_id
    await reassign(svc.host, OLGA, pause_id, "finance", "alice is on leave")

    reloaded = await svc.client.run(run_body(thread))

    assert types(reloaded) == SHOWS_STATE
    shown = shown_interrupt(reloaded)
    assert shown.id == interrupt.id  # the same interrupt, answered with the same id
    assert shown.metadata is not None
    symfonic: dict[str, Any] = shown.metadata["symfonic"]
    assert (symfonic["audience"], symfonic["answerable"]) == ("finance", False)
    moved = symfonic["readdressed"]
    assert moved == {
        "kind": "reassigned",
        "from": None,
        "to": "finance",
        "at": moved["at"],
        "by": "olga",
        "reason": "alice is on leave",
    }
    assert moved["at"].endswith("Z")

    answered = await svc.resume(thread, resolved(interrupt, {"approved": True}))

    assert types(answered) == ANSWERED_ELSEWHERE
    assert said(answered) == (
        "This question is no longer yours to answer: olga handed it from you to finance "
        "(alice is on leave). Your answer was not used."
    )
    assert shown_interrupt(answered).id == interrupt.id
    row = await svc.pause_row(interrupt)
    assert (row.state, row.answer, row.audience) == (PauseState.PENDING, None, "finance")
    assert svc.sent == []


async def test_an_interrupt_reassigned_with_its_owner_kept_is_still_answerable(
    svc: Service,
) -> None:
    thread, _, interrupt = await svc.paused()
    pause_id = (await svc.pause_row(interrupt)).pause_id
    await reassign(svc.host, OLGA, pause_id, "finance", "a second pair of eyes", keep_previous=True)

    shown = shown_interrupt(await svc.client.run(run_body(thread)))

    assert shown.metadata is not None
    assert (shown.metadata["symfonic"]["audience"], shown.metadata["symfonic"]["answerable"]) == (
        "finance",
        True,
    )
    answered = await svc.resume(thread, resolved(interrupt, {"approved": True}))
    assert said(answered) == "Outcome: sent 5 to bob"
    assert svc.sent == [(5, "bob")]


def escalating(sent: list[tuple[int, str]], clock: Clock) -> SymfonicAgent:
    def send_payment(amount: int, to: str) -> str:
        """Send money to someone."""
        sent.append((amount, to))
        return f"sent {amount} to {to}"

    rule = needs_approval(escalate=[escalation(after=3600, audience="team-leads")])
    model = ScriptedChatModel.from_script(
        [call("send_payment", {"amount": 5, "to": "bob"}), reply("Paid.")]
    )
    return SymfonicAgent(
        name="escalating",
        model=model,
        tools=[send_payment],
        approval={"send_payment": rule},
        clock=clock,
    )


@pytest.fixture
async def escalated(store_url: str) -> AsyncIterator[Service]:
    clock = Clock()
    sent: list[tuple[int, str]] = []
    host = ServiceHost([escalating(sent, clock)], store=store_url)
    await host.open()
    client = AguiClient(agui_app(host))
    try:
        yield Service(host, client, clock, sent)
    finally:
        await client.aclose()
        await host.aclose()


async def test_an_escalated_interrupt_names_the_step_and_keeps_its_owner_by_default(
    escalated: Service,
) -> None:
    svc = escalated
    thread, _, interrupt = await svc.paused("escalating")
    fresh = (interrupt.metadata or {})["symfonic"]
    # Asked of its owner, who may answer it: nothing moved yet.
    assert (fresh["audience"], fresh["answerable"]) == (None, True)
    assert "readdressed" not in fresh

    svc.clock.now += timedelta(seconds=3601)
    assert (await svc.host.sweep()).escalated == 1
    shown = shown_interrupt(await svc.client.run(run_body(thread)))

    assert shown.id == interrupt.id and shown.metadata is not None
    symfonic = shown.metadata["symfonic"]
    assert (symfonic["audience"], symfonic["answerable"]) == ("team-leads", True)
    moved = symfonic["readdressed"]
    assert moved == {
        "kind": "escalated",
        "from": None,
        "to": "team-leads",
        "at": moved["at"],
        "after": 3600.0,
    }
    answered = await svc.resume(thread, resolved(interrupt, {"approved": True}))
    assert said(answered) == "Paid."
    assert svc.sent == [(5, "bob")]


def addressed_to(audience: str) -> SymfonicAgent:
    def send_payment(amount: int, to: str) -> str:
        """Send money to someone."""
        return f"sent {amount} to {to}"

    model = ScriptedChatModel.from_script(
        [call("send_payment", {"amount": 5, "to": "bob"}), reply("Paid.")]
    )
    rule = needs_approval(audience=audience)
    return SymfonicAgent(
        name="addressed", model=model, tools=[send_payment], approval={"send_payment": rule}
    )


async def test_the_first_interrupt_names_its_audience_and_whether_the_owner_may_answer(
    store_url: str,
) -> None:
    host = ServiceHost([addressed_to("finance")], store=store_url)
    await host.open()
    client = AguiClient(agui_app(host))
    try:
        events = await client.run(run_body("t-finance", "pay bob 5"))
        reloaded = await client.run(run_body("t-finance"))
    finally:
        await client.aclose()
        await host.aclose()

    # Alice asked, but the approval is finance's: her front end knows from the start.
    first = shown_interrupt(events)
    assert first.metadata is not None
    symfonic = first.metadata["symfonic"]
    assert (symfonic["audience"], symfonic["answerable"]) == ("finance", False)
    assert "readdressed" not in symfonic
    again = shown_interrupt(reloaded)
    assert again.id == first.id and again.metadata == first.metadata
