"""symfonic events → AG-UI events, and AG-UI resume payloads → symfonic answers.

Every projected stream is encoded with ``ag_ui.encoder.EventEncoder`` and read back
with the protocol's models (``parse_stream``), so what is asserted is what a front
end would receive.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import jsonschema
import pytest
from ag_ui.core import (
    BaseEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedInterruptOutcome,
    TextMessageStartEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder

from agui_support import finished, parse_stream, run_body, types
from symfonic.capabilities.human.interactions import approval_schema
from symfonic.core.contracts.types import (
    ApprovalVote,
    ErrorEvent,
    Event,
    InteractionKind,
    ResponseCompleteEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnPausedEvent,
    TurnStartedEvent,
)
from symfonic.server.agui.interrupts import (
    answer_of,
    approval_response_schema,
    interrupt_of,
    status_of,
)
from symfonic.server.agui.mapping import RunProjection

STARTED = TurnStartedEvent(session_id="t1", run_id="r", agent="a", base_revision=0, resumed=False)
PARAMETERS = {
    "type": "object",
    "properties": {"amount": {"type": "integer"}, "to": {"type": "string"}},
    "required": ["amount", "to"],
}


def project(stream: list[Event], **options: Any) -> list[BaseEvent]:
    projection = RunProjection(RunAgentInput.model_validate(run_body("t1", "hi")), **options)
    encoder = EventEncoder()
    out = [encoder.encode(e) for event in stream for e in projection.project(event)]
    return parse_stream("".join(out))


def paused(
    kind: InteractionKind, schema: dict[str, Any], server: str | None = None
) -> TurnPausedEvent:
    return TurnPausedEvent(
        pause_id="p" * 32,
        pause_token="sfp_token",
        interrupt_id="int_p",
        tool_call_id="c1",
        kind=kind,
        query="Approve send_payment?",
        response_schema=schema,
        expires_at=datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC),
        server=server,
    )


def test_text_and_tool_calls_are_sequenced_by_round() -> None:
    events = project(
        [
            STARTED,
            TextDeltaEvent(text="Let me "),
            TextDeltaEvent(text="check."),
            ToolCallEvent(tool_call_id="c1", name="lookup", args={"name": "bob"}),
            ToolCallEvent(tool_call_id="c2", name="lookup", args={"name": "eve"}),
            ToolResultEvent(tool_call_id="c1", name="lookup", content="found", status="ok"),
            ToolResultEvent(tool_call_id="c2", name="lookup", content="nope", status="error"),
            TextDeltaEvent(text="Done."),
            ResponseCompleteEvent(answer="Done.", revision=1),
        ]
    )
    assert types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    texts = [e for e in events if isinstance(e, TextMessageStartEvent)]
    calls = [e for e in events if isinstance(e, ToolCallStartEvent)]
    # The round's text and its calls are one assistant message; the answer is the next.
    assert {c.parent_message_id for c in calls} == {texts[0].message_id}
    assert texts[1].message_id != texts[0].message_id
    assert events[6].delta == '{"name": "bob"}'  # type: ignore[attr-defined]
    results = [e for e in events if isinstance(e, ToolCallResultEvent)]
    assert [(r.tool_call_id, r.content) for r in results] == [("c1", "found"), ("c2", "nope")]
    assert len({r.message_id for r in results}) == 2
    assert finished(events).result == {"answer": "Done.", "revision": 1}


def test_calls_without_text_share_one_minted_parent() -> None:
    events = project(
        [
            STARTED,
            ToolCallEvent(tool_call_id="c1", name="a", args={}),
            ToolCallEvent(tool_call_id="c2", name="b", args={}),
            paused(InteractionKind.APPROVAL, approval_schema(PARAMETERS)),
        ]
    )
    parents = {e.parent_message_id for e in events if isinstance(e, ToolCallStartEvent)}
    assert len(parents) == 1 and None not in parents


def test_a_pause_is_an_interrupt_outcome() -> None:
    schema = approval_schema(PARAMETERS)
    events = project([STARTED, paused(InteractionKind.APPROVAL, schema)])
    outcome = finished(events).outcome
    assert isinstance(outcome, RunFinishedInterruptOutcome)
    [interrupt] = outcome.interrupts
    assert (interrupt.id, interrupt.reason, interrupt.message, interrupt.tool_call_id) == (
        "sfp_token",
        "tool_call",
        "Approve send_payment?",
        "c1",
    )
    assert interrupt.expires_at == "2030-01-02T03:04:05.000Z"
    assert interrupt.response_schema == approval_response_schema(schema)
    assert interrupt.metadata == {"symfonic": {"kind": "approval", "pauseId": "p" * 32}}


@pytest.mark.parametrize("kind", [InteractionKind.INPUT, InteractionKind.FORM])
def test_questions_and_forms_are_input_required_with_their_own_schema(
    kind: InteractionKind,
) -> None:
    schema = {"type": "object", "properties": {"size": {"enum": ["S", "M"]}}}
    outcome = finished(project([STARTED, paused(kind, schema)])).outcome
    assert isinstance(outcome, RunFinishedInterruptOutcome)
    assert outcome.interrupts[0].reason == "input_required"
    assert outcome.interrupts[0].response_schema == schema


def test_a_resumed_run_gives_the_answered_call_only_its_result() -> None:
    events = project(
        [
            STARTED.model_copy(update={"resumed": True}),
            ToolCallEvent(tool_call_id="c1", name="send", args={}),
            ToolResultEvent(tool_call_id="c1", name="send", content="sent", status="ok"),
            TextDeltaEvent(text="Sent."),
            ResponseCompleteEvent(answer="Sent.", revision=2),
        ],
        answered_tool_call_id="c1",
    )
    assert "TOOL_CALL_START" not in types(events)
    assert [e.tool_call_id for e in events if isinstance(e, ToolCallResultEvent)] == ["c1"]


def test_a_replayed_outcome_still_delivers_the_answer_as_a_message() -> None:
    events = project([STARTED, ResponseCompleteEvent(answer="Paid.", revision=1)])
    assert types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert events[2].delta == "Paid."  # type: ignore[attr-defined]


def test_an_error_closes_open_text_and_ends_the_run() -> None:
    events = project(
        [
            STARTED,
            TextDeltaEvent(text="Work"),
            ErrorEvent(code="model_error", message="the model call failed"),
            TextDeltaEvent(text="late"),
        ]
    )
    assert types(events)[-2:] == ["TEXT_MESSAGE_END", "RUN_ERROR"]
    error = events[-1]
    assert isinstance(error, RunErrorEvent)
    assert (error.code, error.message) == ("model_error", "the model call failed")


@pytest.mark.parametrize(
    ("payload", "answer"),
    [
        ({"approved": True}, {"decision": "approve"}),
        (
            {"approved": True, "editedArgs": {"amount": 1, "to": "x"}},
            {"decision": "edit", "args": {"amount": 1, "to": "x"}},
        ),
        ({"approved": False}, {"decision": "reject"}),
        ({"approved": False, "reason": "too much"}, {"decision": "reject", "reason": "too much"}),
        ({"decision": "approve"}, {"decision": "approve"}),
        # Not an AG-UI shape: passed on unchanged, for the pause's schema to refuse.
        ({"approved": False, "editedArgs": {}}, {"approved": False, "editedArgs": {}}),
        ({"approved": "yes"}, {"approved": "yes"}),
        ("approve", "approve"),
    ],
)
def test_approval_payloads(payload: Any, answer: Any) -> None:
    assert answer_of(InteractionKind.APPROVAL, "resolved", payload) == answer


def test_other_payloads_are_the_answer_and_cancelled_carries_none() -> None:
    assert answer_of(InteractionKind.INPUT, "resolved", {"approved": True}) == {"approved": True}
    assert answer_of(InteractionKind.FORM, "resolved", "M") == "M"
    assert answer_of(InteractionKind.APPROVAL, "cancelled", {"approved": True}) is None


IBAN = {"type": "object", "properties": {"iban": {"type": "string"}}, "required": ["iban"]}
ACTION = {"type": "object", "properties": {"action": {"type": "string"}}}


@pytest.mark.parametrize(
    ("server", "schema", "status", "payload", "read"),
    [
        ("bank", IBAN, "resolved", {"action": "decline"}, "declined"),
        ("bank", IBAN, "resolved", {"iban": "DE89"}, "resolved"),
        ("bank", IBAN, "cancelled", {"action": "decline"}, "cancelled"),
        ("bank", IBAN, "resolved", {"action": "decline", "iban": "DE89"}, "resolved"),
        # Not an MCP server's question: there is nobody to tell a decline to.
        (None, IBAN, "resolved", {"action": "decline"}, "resolved"),
        # The server's own form has an ``action`` field: the payload is its answer.
        ("bank", ACTION, "resolved", {"action": "decline"}, "resolved"),
    ],
)
def test_a_decline_payload_declines_only_an_mcp_question(
    server: str | None, schema: dict[str, Any], status: Any, payload: Any, read: str
) -> None:
    question = paused(InteractionKind.FORM, schema, server)
    assert status_of(question, status, payload) == read
    expected = payload if read == "resolved" else None
    assert answer_of(InteractionKind.FORM, status_of(question, status, payload), payload) == (
        expected
    )


def test_the_approval_schema_admits_what_is_accepted_and_nothing_else() -> None:
    schema = approval_response_schema(approval_schema(PARAMETERS))
    for ok in (
        {"approved": True},
        {"approved": True, "editedArgs": {"amount": 2, "to": "b"}},
        {"approved": False, "reason": "no"},
        {"decision": "approve"},
        {"decision": "edit", "args": {"amount": 2, "to": "b"}},
    ):
        jsonschema.validate(ok, schema)
    for bad in (
        {"approved": True, "editedArgs": {"amount": "x"}},
        {"approved": "yes"},
        {"approved": False, "editedArgs": {}},
        {"decision": "maybe"},
        "approve",
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_an_interrupt_of_an_approval_needing_two_says_where_its_vote_stands() -> None:
    at = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
    event = TurnPausedEvent(
        pause_id="p_1",
        pause_token="token",
        interrupt_id="int_p_1",
        tool_call_id="call_1",
        kind=InteractionKind.APPROVAL,
        query="Approve pay?",
        response_schema=approval_schema({"type": "object"}),
        expires_at=at,
        approvals_required=2,
        approvals=(ApprovalVote("carol", at),),
        allow_requester=False,
    )
    said = interrupt_of(event).metadata["symfonic"]  # type: ignore[index]
    assert said["approvalsRequired"] == 2 and said["allowRequester"] is False
    assert said["approvals"] == [{"principal": "carol", "at": "2030-01-01T12:00:00.000Z"}]
    single = interrupt_of(event.model_copy(update={"approvals_required": 1}))
    assert "approvals" not in single.metadata["symfonic"]  # type: ignore[index]
