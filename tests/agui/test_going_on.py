"""A front end can always go on: every run that finds its thread elsewhere than it
thought ends with ``RUN_FINISHED`` and what is true of the thread, never with an
error that leaves an AG-UI client holding interrupts it cannot clear.

Each case is checked on both stores, with its frames in order, and on the pause
row and the payments made: an uncovered interrupt is never acted on, a different
answer never runs, nothing runs twice.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    TextMessageContentEvent,
    ToolMessage,
    UserMessage,
)
from langchain_core.messages import BaseMessage
from langchain_core.messages import ToolMessage as LcToolMessage

from agui_support import AguiClient, agui_app, finished, run_body, types
from symfonic import SymfonicAgent
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.types import PauseState
from symfonic.core.messages import text_of
from symfonic.server.agui.run import agui_run
from symfonic.server.service.host import ServiceHost
from symfonic.testing import ScriptedChatModel, call, reply
from test_interrupts import (
    ANSWERED_ELSEWHERE,
    PAY,
    SHOWS_STATE,
    Service,
    _service,
    assert_shows_open,
    resolved,
)

pytestmark = pytest.mark.anyio

REPLAYED = [
    "RUN_STARTED",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "MESSAGES_SNAPSHOT",
    "RUN_FINISHED",
]


@pytest.fixture
async def svc(store_url: str) -> AsyncIterator[Service]:
    async for service in _service(store_url):
        yield service


def frames(events: list[BaseEvent]) -> list[str]:
    """The stream's event types, a run of text fragments counted as one."""
    return [kind for kind, _ in itertools.groupby(types(events))]


def snapshot_of(events: list[BaseEvent]) -> MessagesSnapshotEvent:
    [snapshot] = [e for e in events if isinstance(e, MessagesSnapshotEvent)]
    return snapshot


async def test_a_reloaded_page_gets_the_thread_and_its_open_interrupt_and_can_answer_it(
    svc: Service,
) -> None:
    thread, _, interrupt = await svc.paused()

    events = await svc.client.run(run_body(thread))  # no messages, no resume

    assert_shows_open(events, interrupt)
    user, assistant = snapshot_of(events).messages
    assert isinstance(user, UserMessage) and user.content == PAY
    assert isinstance(assistant, AssistantMessage) and assistant.tool_calls is not None
    [gated] = assistant.tool_calls
    assert (gated.id, gated.function.name) == (interrupt.tool_call_id, "send_payment")
    assert (await svc.pause_row(interrupt)).state is PauseState.PENDING and svc.sent == []
    # The card that came back answers as the first one would have.
    answered = await svc.resume(thread, resolved(interrupt, {"approved": True}))
    assert isinstance(finished(answered).outcome, RunFinishedSuccessOutcome)
    assert svc.sent == [(5, "bob")]


async def test_a_new_message_while_an_interrupt_is_open_is_not_run(svc: Service) -> None:
    thread, _, interrupt = await svc.paused()

    events = await svc.client.run(run_body(thread, "Never mind, pay carol instead"))

    assert_shows_open(events, interrupt)
    said = [m.content for m in snapshot_of(events).messages if isinstance(m, UserMessage)]
    assert said == [PAY]
    row = await svc.pause_row(interrupt)
    assert (row.state, row.answer) == (PauseState.PENDING, None) and svc.sent == []
    assert (await svc.host.store.get_session(thread)).revision == 0  # type: ignore[union-attr]


async def test_a_thread_with_nothing_open_answers_an_empty_run_with_its_messages(
    svc: Service,
) -> None:
    thread, _, interrupt = await svc.paused()
    await svc.resume(thread, resolved(interrupt, {"approved": True}))

    events = await svc.client.run(run_body(thread))

    assert types(events) == SHOWS_STATE
    assert isinstance(finished(events).outcome, RunFinishedSuccessOutcome)
    tools = [m for m in snapshot_of(events).messages if isinstance(m, ToolMessage)]
    assert [(t.tool_call_id, t.content) for t in tools] == [
        (interrupt.tool_call_id, "sent 5 to bob")
    ]
    assert svc.sent == [(5, "bob")]


async def test_a_resumed_run_ends_with_the_threads_messages_and_the_tools_real_result(
    svc: Service,
) -> None:
    thread, _, interrupt = await svc.paused()

    events = await svc.resume(thread, resolved(interrupt, {"approved": True}))

    assert frames(events) == [
        "RUN_STARTED",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    ]
    messages = snapshot_of(events).messages
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    tool = messages[2]
    assert isinstance(tool, ToolMessage)
    assert (tool.tool_call_id, tool.content) == (interrupt.tool_call_id, "sent 5 to bob")
    assert messages[3].content == "Outcome: sent 5 to bob"


async def test_a_resume_that_pauses_again_ends_with_the_messages_and_the_next_interrupt(
    svc: Service,
) -> None:
    thread, _, first = await svc.paused("interviewer")

    events = await svc.resume(thread, resolved(first, "red"))

    assert frames(events) == [
        "RUN_STARTED",
        "TOOL_CALL_RESULT",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    ]
    tools = [m for m in snapshot_of(events).messages if isinstance(m, ToolMessage)]
    assert [(t.tool_call_id, t.content) for t in tools] == [(first.tool_call_id, "red")]
    assert isinstance(finished(events).outcome, RunFinishedInterruptOutcome)


async def test_an_interrupt_answered_elsewhere_differently_finishes_with_that_outcome(
    svc: Service,
) -> None:
    thread, _, interrupt = await svc.paused()
    await svc.resume(thread, resolved(interrupt, {"approved": False, "reason": "not today"}))

    events = await svc.resume(thread, resolved(interrupt, {"approved": True}))

    assert types(events) == ANSWERED_ELSEWHERE
    assert isinstance(finished(events).outcome, RunFinishedSuccessOutcome)
    note = "".join(e.delta for e in events if isinstance(e, TextMessageContentEvent))
    assert note == (
        "This was already answered by alice: they rejected it (not today). "
        "Your answer was not used."
    )
    tools = [m for m in snapshot_of(events).messages if isinstance(m, ToolMessage)]
    assert [t.content for t in tools] == ["The person rejected this call: not today"]
    row = await svc.pause_row(interrupt)
    assert (row.state, row.answer) == (
        PauseState.PUBLISHED,
        {"decision": "reject", "reason": "not today"},
    )
    assert svc.sent == []


async def test_a_superseded_interrupt_answered_differently_ends_with_the_next_one(
    svc: Service,
) -> None:
    thread, _, first = await svc.paused("interviewer")
    outcome = finished(await svc.resume(thread, resolved(first, "red"))).outcome
    assert isinstance(outcome, RunFinishedInterruptOutcome)

    events = await svc.resume(thread, resolved(first, "blue"))

    assert types(events) == ANSWERED_ELSEWHERE
    late = finished(events).outcome
    assert isinstance(late, RunFinishedInterruptOutcome) and late.interrupts == outcome.interrupts


# -- two tabs at once -------------------------------------------------------------


def slow_payments(sent: list[tuple[int, str]], gate: anyio.Event) -> SymfonicAgent:
    async def send_payment(amount: int, to: str) -> str:
        """Send money to someone, once the bank answers."""
        await gate.wait()
        sent.append((amount, to))
        return f"sent {amount} to {to}"

    def respond(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        if isinstance(last, LcToolMessage):
            return reply(f"Outcome: {text_of(last)}")
        return call("send_payment", {"amount": 5, "to": "bob"})

    return SymfonicAgent(
        name="slow",
        model=ScriptedChatModel(respond=respond),
        tools=[send_payment],
        approval={"send_payment"},
    )


@pytest.fixture
async def slow(store_url: str) -> AsyncIterator[tuple[Service, anyio.Event]]:
    gate = anyio.Event()
    sent: list[tuple[int, str]] = []
    host = ServiceHost([slow_payments(sent, gate)], store=store_url)
    await host.open()
    client = AguiClient(agui_app(host))
    try:
        yield Service(host, client, clock=None, sent=sent), gate  # type: ignore[arg-type]
    finally:
        await client.aclose()
        await host.aclose()


async def _claimed(svc: Service, interrupt: Any) -> None:
    for _ in range(500):
        if (await svc.pause_row(interrupt)).state is PauseState.CLAIMED:
            return
        await anyio.sleep(0.02)
    raise AssertionError("the first tab never claimed the interrupt")


async def test_two_tabs_approving_at_once_pay_once_and_both_get_the_outcome(
    slow: tuple[Service, anyio.Event],
) -> None:
    svc, gate = slow
    thread, _, interrupt = await svc.paused("slow")
    seen: dict[str, list[BaseEvent]] = {}

    async def tab(name: str, payload: dict[str, Any]) -> None:
        seen[name] = await svc.resume(thread, resolved(interrupt, payload))

    async with anyio.create_task_group() as tabs:
        tabs.start_soon(tab, "first", {"approved": True})
        await _claimed(svc, interrupt)
        tabs.start_soon(tab, "second", {"approved": True})
        tabs.start_soon(tab, "different", {"approved": False})
        await anyio.sleep(0.5)
        assert seen == {}  # both wait on the claim in flight
        gate.set()

    assert frames(seen["first"])[-2:] == ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert types(seen["second"]) == REPLAYED
    # The second tab's transcript gets the tool's real result too, not its own.
    tools = [m for m in snapshot_of(seen["second"]).messages if isinstance(m, ToolMessage)]
    assert [(t.tool_call_id, t.content) for t in tools] == [
        (interrupt.tool_call_id, "sent 5 to bob")
    ]
    assert (
        finished(seen["second"]).result
        == finished(seen["first"]).result
        == {
            "answer": "Outcome: sent 5 to bob",
            "revision": 1,
        }
    )
    assert types(seen["different"]) == ANSWERED_ELSEWHERE
    assert isinstance(finished(seen["different"]).outcome, RunFinishedSuccessOutcome)
    assert svc.sent == [(5, "bob")]


async def test_a_claim_held_past_the_bound_is_a_clear_error(
    slow: tuple[Service, anyio.Event],
) -> None:
    svc, gate = slow
    thread, _, interrupt = await svc.paused("slow")
    async with anyio.create_task_group() as tabs:
        tabs.start_soon(svc.resume, thread, resolved(interrupt, {"approved": True}))
        await _claimed(svc, interrupt)
        body = run_body(thread, resume=[resolved(interrupt, {"approved": True})])
        waited = [
            event
            async for event in agui_run(
                svc.host, Principal("alice"), RunAgentInput.model_validate(body), claim_wait=0.3
            )
        ]
        gate.set()
    [error] = waited
    assert isinstance(error, RunErrorEvent) and error.code == "already_claimed"
    assert error.message == (
        "another answer to this interrupt was still being carried out after 0.3 seconds; "
        "send the same answer again shortly to get its outcome"
    )
    assert svc.sent == [(5, "bob")]
