"""The AG-UI interrupt contract, end to end through ``POST /v1/agui``.

Each rule is checked on the stream (validated with ``ag_ui.core``'s models) and on
the pause row afterwards: a refused resume leaves the pause ``pending`` and
unanswered, so the interrupt can still be answered.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import jsonschema
import pytest
from ag_ui.core import (
    BaseEvent,
    Interrupt,
    RunErrorEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from langchain_core.messages import BaseMessage, ToolMessage

from agui_support import AguiClient, agui_app, finished, run_body, types
from symfonic import SymfonicAgent
from symfonic.core.contracts.store import PauseRecord
from symfonic.core.contracts.types import PauseState
from symfonic.core.messages import text_of
from symfonic.server.service.host import ServiceHost
from symfonic.testing import ScriptedChatModel, call, current_turn, reply

pytestmark = pytest.mark.anyio

PAY = "Pay bob 5"


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


def payments(sent: list[tuple[int, str]], clock: Clock) -> SymfonicAgent:
    def send_payment(amount: int, to: str) -> str:
        """Send money to someone."""
        sent.append((amount, to))
        return f"sent {amount} to {to}"

    def respond(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return reply(f"Outcome: {text_of(last)}")
        return call("send_payment", {"amount": 5, "to": "bob"})

    return SymfonicAgent(
        name="payments",
        model=ScriptedChatModel(respond=respond),
        tools=[send_payment],
        approval={"send_payment"},
        clock=clock,
    )


def interviewer(clock: Clock) -> SymfonicAgent:
    """Asks two questions in one turn, so its first answer is superseded by a second pause."""

    def respond(messages: list[BaseMessage]) -> Any:
        answers = [text_of(m) for m in current_turn(messages) if isinstance(m, ToolMessage)]
        if not answers:
            return call("ask_human", {"question": "Which colour?"})
        if len(answers) == 1:
            return call("ask_human", {"question": "Which size?"})
        return reply(f"A {answers[1]} {answers[0]} one.")

    return SymfonicAgent(name="interviewer", model=ScriptedChatModel(respond=respond), clock=clock)


@dataclass
class Service:
    host: ServiceHost
    client: AguiClient
    clock: Clock
    sent: list[tuple[int, str]] = field(default_factory=list)

    async def pause_row(self, interrupt: Interrupt) -> PauseRecord:
        assert interrupt.metadata is not None
        row = await self.host.store.get_pause(interrupt.metadata["symfonic"]["pauseId"])
        assert row is not None
        return row

    async def paused(self, agent: str = "payments") -> tuple[str, list[BaseEvent], Interrupt]:
        thread = f"t-{uuid.uuid4().hex}"
        events = await self.client.run(run_body(thread, PAY, forwardedProps={"agent": agent}))
        outcome = finished(events).outcome
        assert isinstance(outcome, RunFinishedInterruptOutcome)
        assert len(outcome.interrupts) == 1
        return thread, events, outcome.interrupts[0]

    async def resume(self, thread: str, *entries: dict[str, Any]) -> list[BaseEvent]:
        return await self.client.run(run_body(thread, resume=list(entries)))


async def _service(url: str) -> AsyncIterator[Service]:
    clock = Clock()
    sent: list[tuple[int, str]] = []
    host = ServiceHost([payments(sent, clock), interviewer(clock)], store=url)
    await host.open()
    client = AguiClient(agui_app(host))
    try:
        yield Service(host, client, clock, sent)
    finally:
        await client.aclose()
        await host.aclose()


@pytest.fixture
async def svc(sqlite_url: str) -> AsyncIterator[Service]:
    async for service in _service(sqlite_url):
        yield service


@pytest.fixture
async def svc_any_store(store_url: str) -> AsyncIterator[Service]:
    async for service in _service(store_url):
        yield service


def resolved(interrupt: Interrupt, payload: Any) -> dict[str, Any]:
    return {"interruptId": interrupt.id, "status": "resolved", "payload": payload}


def refused(events: list[BaseEvent], code: str) -> RunErrorEvent:
    assert len(events) == 1, types(events)
    error = events[0]
    assert isinstance(error, RunErrorEvent)
    assert error.code == code, (error.code, error.message)
    return error


SHOWS_STATE = ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
ANSWERED_ELSEWHERE = [
    "RUN_STARTED", "MESSAGES_SNAPSHOT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END", "RUN_FINISHED",
]


def assert_shows_open(events: list[BaseEvent], interrupt: Interrupt) -> None:
    """The thread's state with ``interrupt`` still open: what a reloaded page needs."""
    assert types(events) == SHOWS_STATE
    outcome = finished(events).outcome
    assert isinstance(outcome, RunFinishedInterruptOutcome)
    assert outcome.interrupts == [interrupt]


async def assert_unspent(svc: Service, interrupt: Interrupt) -> None:
    row = await svc.pause_row(interrupt)
    assert (row.state, row.answer, row.answered_by, row.claim_id) == (
        PauseState.PENDING, None, None, None,
    )
    assert svc.sent == []


# -- pausing and resuming -------------------------------------------------------


async def test_approval_pauses_as_a_tool_call_interrupt_and_resumes_on_its_call(
    svc_any_store: Service,
) -> None:
    svc = svc_any_store
    thread, events, interrupt = await svc.paused()
    assert types(events) == [
        "RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED",
    ]
    started, call_start = events[0], events[1]
    assert isinstance(started, RunStartedEvent) and isinstance(call_start, ToolCallStartEvent)
    assert started.thread_id == thread and started.input is not None
    assert started.input.thread_id == thread and started.run_id == started.input.run_id
    assert call_start.tool_call_name == "send_payment"
    row = await svc.pause_row(interrupt)
    assert interrupt.id.startswith("sfp_") and interrupt.reason == "tool_call"
    assert interrupt.tool_call_id == call_start.tool_call_id == row.tool_call_id
    assert interrupt.message == row.query and "send_payment" in interrupt.message
    assert interrupt.expires_at == row.expires_at.isoformat(timespec="milliseconds").replace(
        "+00:00", "Z"
    )
    assert interrupt.response_schema is not None
    jsonschema.validate({"approved": True}, interrupt.response_schema)
    jsonschema.validate({"decision": "approve"}, interrupt.response_schema)
    assert row.state is PauseState.PENDING and svc.sent == []

    events = await svc.resume(thread, resolved(interrupt, {"approved": True}))

    assert "TOOL_CALL_START" not in types(events)
    result = next(e for e in events if isinstance(e, ToolCallResultEvent))
    assert (result.tool_call_id, result.content) == (interrupt.tool_call_id, "sent 5 to bob")
    done = finished(events)
    assert isinstance(done.outcome, RunFinishedSuccessOutcome)
    assert done.result == {"answer": "Outcome: sent 5 to bob", "revision": 1}
    assert svc.sent == [(5, "bob")]
    row = await svc.pause_row(interrupt)
    assert (row.state, row.answer, row.answered_by) == (
        PauseState.PUBLISHED, {"decision": "approve"}, "alice",
    )


async def test_edited_args_run_the_call_with_the_persons_arguments(svc: Service) -> None:
    thread, _, interrupt = await svc.paused()
    edited = {"approved": True, "editedArgs": {"amount": 3, "to": "carol"}}
    events = await svc.resume(thread, resolved(interrupt, edited))
    assert isinstance(finished(events).outcome, RunFinishedSuccessOutcome)
    assert svc.sent == [(3, "carol")]
    row = await svc.pause_row(interrupt)
    assert (row.state, row.answer) == (
        PauseState.PUBLISHED, {"decision": "edit", "args": {"amount": 3, "to": "carol"}},
    )


async def test_a_rejection_never_runs_the_call(svc: Service) -> None:
    thread, _, interrupt = await svc.paused()
    events = await svc.resume(thread, resolved(interrupt, {"approved": False, "reason": "no"}))
    result = next(e for e in events if isinstance(e, ToolCallResultEvent))
    assert result.tool_call_id == interrupt.tool_call_id
    assert result.content == "The person rejected this call: no"
    assert isinstance(finished(events).outcome, RunFinishedSuccessOutcome)
    assert svc.sent == []
    row = await svc.pause_row(interrupt)
    assert (row.state, row.answer) == (PauseState.PUBLISHED, {"decision": "reject", "reason": "no"})


async def test_a_cancelled_entry_is_a_cancelled_answer(svc: Service) -> None:
    thread, _, interrupt = await svc.paused()
    entry = {"interruptId": interrupt.id, "status": "cancelled"}
    events = await svc.resume(thread, entry)
    result = next(e for e in events if isinstance(e, ToolCallResultEvent))
    assert result.content == "The person declined to answer."
    assert isinstance(finished(events).outcome, RunFinishedSuccessOutcome)
    assert svc.sent == []
    row = await svc.pause_row(interrupt)
    assert (row.state, row.answer_status) == (PauseState.PUBLISHED, "cancelled")


async def test_ask_human_is_input_required_and_a_second_question_interrupts_again(
    svc: Service,
) -> None:
    thread, _, first = await svc.paused("interviewer")
    assert (first.reason, first.message, first.response_schema) == (
        "input_required", "Which colour?", {"type": "string"},
    )
    events = await svc.resume(thread, resolved(first, "red"))
    result = next(e for e in events if isinstance(e, ToolCallResultEvent))
    assert (result.tool_call_id, result.content) == (first.tool_call_id, "red")
    outcome = finished(events).outcome
    assert isinstance(outcome, RunFinishedInterruptOutcome)
    second = outcome.interrupts[0]
    assert (second.reason, second.message) == ("input_required", "Which size?")
    assert (await svc.pause_row(first)).state is PauseState.SUPERSEDED

    done = await svc.resume(thread, resolved(second, "large"))
    assert finished(done).result == {"answer": "A large red one.", "revision": 1}


# -- the rules ------------------------------------------------------------------


async def test_input_without_resume_while_an_interrupt_is_pending_runs_nothing(
    svc: Service,
) -> None:
    thread, _, interrupt = await svc.paused()
    events = await svc.client.run(run_body(thread, "Never mind, pay carol instead"))
    assert_shows_open(events, interrupt)
    await assert_unspent(svc, interrupt)
    assert (await svc.host.store.get_session(thread)).revision == 0  # type: ignore[union-attr]


async def test_a_resume_must_answer_the_threads_open_interrupt(svc: Service) -> None:
    thread, _, interrupt = await svc.paused()
    _, _, other = await svc.paused()

    refused(await svc.resume(thread, resolved(other, {"approved": True})), "resume_mismatch")
    forged = interrupt.id[:-4] + ("AAAA" if not interrupt.id.endswith("AAAA") else "BBBB")
    refused(await svc.resume(thread, resolved(interrupt, None) | {"interruptId": forged}),
            "resume_mismatch")
    both = [resolved(interrupt, {"approved": True}), resolved(other, {"approved": True})]
    refused(await svc.resume(thread, *both), "resume_mismatch")
    assert_shows_open(await svc.client.run(run_body(thread, PAY, resume=[])), interrupt)

    await assert_unspent(svc, interrupt)
    await assert_unspent(svc, other)
    # Still answerable: nothing above spent it.
    events = await svc.resume(thread, resolved(interrupt, {"approved": True}))
    assert isinstance(finished(events).outcome, RunFinishedSuccessOutcome)


async def test_a_payload_failing_the_response_schema_is_refused_and_spends_nothing(
    svc: Service,
) -> None:
    thread, _, interrupt = await svc.paused()
    for payload in ({"approved": "yes"}, {"approved": True, "editedArgs": {"amount": "lots"}},
                    {"decision": "maybe"}, "approve", None):
        refused(await svc.resume(thread, resolved(interrupt, payload)), "invalid_answer")
        await assert_unspent(svc, interrupt)
    events = await svc.resume(thread, resolved(interrupt, {"approved": True}))
    assert svc.sent == [(5, "bob")] and isinstance(
        finished(events).outcome, RunFinishedSuccessOutcome
    )


async def test_an_expired_interrupt_is_refused_and_spends_nothing(svc: Service) -> None:
    thread, _, interrupt = await svc.paused()
    svc.clock.now += timedelta(days=2)
    refused(await svc.resume(thread, resolved(interrupt, {"approved": True})), "pause_expired")
    await assert_unspent(svc, interrupt)


async def test_cancelling_an_expired_interrupt_moves_the_thread_past_it(svc: Service) -> None:
    thread, _, interrupt = await svc.paused()
    svc.clock.now += timedelta(days=2)
    events = await svc.resume(thread, {"interruptId": interrupt.id, "status": "cancelled"})
    assert types(events) == ["RUN_STARTED", "RUN_FINISHED"]
    assert isinstance(finished(events).outcome, RunFinishedSuccessOutcome)
    await assert_unspent(svc, interrupt)
    # The thread takes new input again, and the expired approval never runs.
    events = await svc.client.run(run_body(thread, PAY))
    assert isinstance(finished(events).outcome, RunFinishedInterruptOutcome)
    assert svc.sent == []


async def test_an_identical_resume_replays_the_outcome_and_runs_nothing(svc: Service) -> None:
    thread, _, interrupt = await svc.paused()
    entry = resolved(interrupt, {"approved": True})
    first = finished(await svc.resume(thread, entry))

    again = await svc.resume(thread, entry)
    assert types(again) == [
        "RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
        "MESSAGES_SNAPSHOT", "RUN_FINISHED",
    ]
    assert (finished(again).outcome, finished(again).result) == (first.outcome, first.result)
    assert svc.sent == [(5, "bob")]
    # The same decision in symfonic's own spelling is the same answer.
    assert finished(await svc.resume(thread, resolved(interrupt, {"decision": "approve"}))).result \
        == first.result

    late = await svc.resume(thread, resolved(interrupt, {"approved": False}))
    assert types(late) == ANSWERED_ELSEWHERE
    assert isinstance(finished(late).outcome, RunFinishedSuccessOutcome)
    row = await svc.pause_row(interrupt)
    assert (row.state, row.answer) == (PauseState.PUBLISHED, {"decision": "approve"})
    assert svc.sent == [(5, "bob")]


async def test_replaying_a_superseded_answer_returns_the_same_next_interrupt(
    svc: Service,
) -> None:
    thread, _, first = await svc.paused("interviewer")
    entry = resolved(first, "red")
    outcome = finished(await svc.resume(thread, entry)).outcome
    replayed = finished(await svc.resume(thread, entry)).outcome
    assert isinstance(outcome, RunFinishedInterruptOutcome)
    assert replayed == outcome
    second = outcome.interrupts[0]
    assert (await svc.pause_row(second)).state is PauseState.PENDING
