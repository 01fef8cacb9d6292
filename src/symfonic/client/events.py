"""A stream's frames as the Python API's typed events, and a JSON outcome as its `TurnResult`.

A frame of an unknown type is passed over, so a newer service breaks no client.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import TypeAdapter

from symfonic.client.models import Pause, PausePage, Readdressed, RunStarted
from symfonic.client.sse import Frame
from symfonic.core.contracts.types import (
    STREAM_EVENTS,
    ApprovalRecordedEvent,
    Event,
    PauseInfo,
    PauseState,
    TurnError,
    TurnPausedEvent,
    TurnResult,
    asked,
)
from symfonic.core.contracts.wire import WireModel

_EVENT_TYPES: dict[str, type[Event]] = {kind.type: kind for kind in STREAM_EVENTS}
_PAUSE_INFO = TypeAdapter(PauseInfo)
SNAPSHOT = "pauses.snapshot"


def event_of(frame: Frame) -> Event | None:
    """The typed event a turn's frame carries; None for a type this client does not know."""
    kind = _EVENT_TYPES.get(frame.type)
    if kind is None:
        return None
    data = dict(frame.data)
    if kind is TurnPausedEvent:
        data["pause_token"] = data.get("token", data.get("pause_token"))
    return kind.model_validate(data)


# The status of an approval counted toward a pause that needs several approvers.
ACCEPTED = 202


def approval_recorded(body: dict[str, Any]) -> ApprovalRecordedEvent:
    """A 202 outcome (an approval counted, the pause still waiting) as the stream's last event."""
    pause = _PAUSE_INFO.validate_python(body["pause"])
    return ApprovalRecordedEvent(
        **asked(pause),
        pause_token=pause.token,
        session_id=body["session_id"],
        base_revision=body["revision"],
    )


def started_or_counted(body: dict[str, Any]) -> RunStarted | ApprovalRecordedEvent:
    """A background resume's 202: the run it started, or, for an approval only counted
    toward a pause that needs several, no run and the event an attached resume ends with."""
    return RunStarted.model_validate(body) if "run_id" in body else approval_recorded(body)


def result_of(body: dict[str, Any]) -> TurnResult:
    """A turn's JSON outcome (``Accept: application/json``) as the Python API's result."""
    pause, error = body.get("pause"), body.get("error")
    return TurnResult(
        status=body["status"],
        session_id=body["session_id"],
        revision=body["revision"],
        answer=body.get("answer"),
        pause=None if pause is None else _PAUSE_INFO.validate_python(pause),
        error=None if error is None else TurnError(error["code"], error["message"]),
    )


class PauseSnapshot(PausePage):
    """``pauses.snapshot``: the first page of what the caller may answer now.

    ``position`` is the frame's ``id:``, the store's change position.
    """

    type: Literal["pauses.snapshot"] = "pauses.snapshot"
    position: str | None = None


class PauseChange(WireModel):
    """``pause.created`` … ``pause.superseded``: one pause moved to ``state`` at ``at``.

    ``pause`` is the listing's item (token included) on ``pause.created`` while
    it can be answered; ``answered_by``, ``decision`` and ``edited_args`` say
    who answered and how, on ``pause.claimed`` and ``pause.answered``;
    ``readdressed`` from whom and why, on ``pause.escalated`` and ``pause.reassigned``;
    ``pause`` with its ``approvals`` so far on ``pause.approved``.
    """

    type: str
    position: str | None = None
    pause_id: str
    session_id: str
    agent: str
    state: PauseState
    at: datetime
    answered_by: str | None = None
    decision: Literal["approve", "edit", "reject", "answer", "decline"] | None = None
    edited_args: dict[str, Any] | None = None
    pause: Pause | None = None
    readdressed: Readdressed | None = None


FeedEvent = PauseSnapshot | PauseChange


def feed_event_of(frame: Frame) -> FeedEvent | None:
    """The feed's frame as a typed event; None for a type this client does not know."""
    extra = {"position": frame.id}
    if frame.type == SNAPSHOT:
        return PauseSnapshot.model_validate({**frame.data, **extra})
    if frame.type.startswith("pause."):
        return PauseChange.model_validate({**frame.data, **extra, "type": frame.type})
    return None
