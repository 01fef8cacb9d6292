"""Every view of a pause carries one question, under the names its clients read.

The stream's ``turn.paused`` frame, a caller's ``PauseInfo``, the store's row
and the two HTTP bodies all inherit the question from ``PauseQuestion``; what
each one sends over the wire is pinned here, so a change to the shared
declaration that would rename or drop a field a client reads fails here first.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from symfonic import PauseInfo
from symfonic.core.contracts.pause_views import PauseView
from symfonic.core.contracts.store import PauseRecord
from symfonic.core.contracts.types import (
    InteractionKind,
    PauseQuestion,
    PauseState,
    TurnPausedEvent,
    TurnResult,
    asked,
)
from symfonic.server.http.schemas import PauseOutcome, TurnOutcome
from symfonic.turns.outcomes import pause_info

QUESTION = {
    "pause_id": "p_1",
    "interrupt_id": "int_p_1",
    "tool_call_id": "call_1",
    "kind": InteractionKind.APPROVAL,
    "query": "Pay 5 EUR?",
    "response_schema": {"type": "object"},
    "expires_at": datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC),
    "sub_agent": None,
    "args_digest": "ab" * 32,
    "approvals_required": 2,
    "approvals": (),
    "allow_requester": False,
    "server": None,
}
TOKEN = "secret-token-value"


def record(**changes: object) -> PauseRecord:
    values: dict[str, object] = {
        **QUESTION,
        "session_id": "s_1",
        "principal": "alice",
        "agent": "assistant",
        "audience": None,
        "base_revision": 3,
        "state": PauseState.PENDING,
        "created_at": QUESTION["expires_at"] - timedelta(days=1),  # type: ignore[operator]
        "answer": {"decision": "approve"},
    }
    values.update(changes)
    return PauseRecord(**values)  # type: ignore[arg-type]


def test_the_paused_frame_sends_the_question_and_its_token() -> None:
    event = TurnPausedEvent(**QUESTION, pause_token=TOKEN)
    assert set(event.model_dump(mode="json")) == {
        "pause_id", "pause_token", "interrupt_id", "tool_call_id", "kind", "query",
        "response_schema", "expires_at", "sub_agent", "args_digest", "approvals_required",
        "approvals", "allow_requester", "server",
    }
    assert event.model_dump(mode="json")["expires_at"] == "2030-01-02T03:04:05Z"


def test_a_paused_turn_outcome_sends_the_question_and_its_token() -> None:
    event = TurnPausedEvent(**QUESTION, pause_token=TOKEN)
    outcome = TurnOutcome.of(TurnResult("paused", "s_1", 3, pause=pause_info(event)))
    assert outcome.model_dump(mode="json")["pause"] == {
        "pause_id": "p_1",
        "token": TOKEN,
        "kind": "approval",
        "query": "Pay 5 EUR?",
        "response_schema": {"type": "object"},
        "tool_call_id": "call_1",
        "interrupt_id": "int_p_1",
        "expires_at": "2030-01-02T03:04:05Z",
        "sub_agent": None,
        "args_digest": "ab" * 32,
        "approvals_required": 2,
        "approvals": [],
        "allow_requester": False,
        "server": None,
    }


def test_a_listed_pause_shows_the_question_and_the_row_but_never_the_answer() -> None:
    view = PauseView.of(record(), TOKEN).model_dump(mode="json")
    assert {
        "pause_id", "session_id", "agent", "kind", "query", "response_schema", "tool_call_id",
        "interrupt_id", "audience", "state", "expires_at", "answered_by", "answered_at", "token",
        "sub_agent", "args_digest", "approvals_required", "approvals", "allow_requester",
        "server",
    } <= set(view)
    assert view["token"] == TOKEN and view["state"] == "pending" and view["agent"] == "assistant"
    # What the row holds for the runtime alone stays off the wire.
    assert not {
        "answer", "principal", "claim_id", "outcome", "base_revision", "parent_session_id",
        "delegated_pause_id",
    } & set(view)
    assert PauseView.of(record(), None).token is None


def test_the_caller_result_and_the_row_hold_the_same_question() -> None:
    event = TurnPausedEvent(**QUESTION, pause_token=TOKEN)
    info = pause_info(event)
    assert info.token == TOKEN
    assert asked(info) == asked(event) == asked(record()) == QUESTION
    for view in (info, event, record()):
        assert isinstance(view, PauseQuestion)


@pytest.mark.parametrize(
    "view",
    [
        TurnPausedEvent(**QUESTION, pause_token=TOKEN),
        PauseInfo(**QUESTION, token=TOKEN),
        PauseOutcome(**QUESTION, token=TOKEN),
        PauseView.of(record(), TOKEN),
    ],
    ids=lambda view: type(view).__name__,
)
def test_a_pause_token_never_prints(view: object) -> None:
    assert TOKEN not in repr(view) and TOKEN not in str(view)


def test_views_are_frozen() -> None:
    event = TurnPausedEvent(**QUESTION, pause_token=TOKEN)
    with pytest.raises(Exception, match="frozen"):
        event.query = "changed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        record().query = "changed"  # type: ignore[misc]
