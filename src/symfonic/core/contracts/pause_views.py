"""A pause as the principal who may answer it sees it (`PauseView`): one wire shape wherever a
pause appears, served by the HTTP API and read by `symfonic.client`."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from symfonic.core.contracts.readdressing import Readdressing, ReaddressKind
from symfonic.core.contracts.store import PauseRecord
from symfonic.core.contracts.types import PauseQuestion, PauseState


class ToolCallView(BaseModel):
    id: str
    name: str
    args: dict[str, Any]


class MessageView(BaseModel):
    """One committed message: role, content, and the tool-call links between them."""

    role: str
    content: str | list[Any]
    tool_calls: list[ToolCallView] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    status: str | None = None


class ReaddressedView(BaseModel):
    """The latest time the pause was handed to another audience."""

    kind: ReaddressKind = Field(
        description="escalated: a step of its escalation chain; reassigned: by an operator."
    )
    previous: str | None = Field(description="The audience before; null: the session's owner.")
    audience: str = Field(description="The audience it was handed to.")
    at: datetime
    by: str | None = Field(default=None, description="reassigned: the operator.")
    reason: str | None = Field(default=None, description="reassigned: the operator's reason.")
    after: float | None = Field(
        default=None, description="escalated: the step's seconds after the pause was created."
    )

    @classmethod
    def of(cls, done: Readdressing | None) -> ReaddressedView | None:
        return None if done is None else cls(**asdict(done))


# The question's fields come from PauseQuestion; the ones declared here are the
# row's fields a caller may see. ``of`` takes each from the record by name, so a
# field added here that the record has needs nothing more. (A model's docstring
# is its description in the OpenAPI document: notes for readers of this code
# are comments.)
class PauseView(BaseModel, PauseQuestion, frozen=True):
    """A pause, as a principal who may answer it sees it."""

    session_id: str
    agent: str
    audience: str | None
    state: PauseState
    answered_by: str | None = None
    answered_at: datetime | None = None
    edited_args_digest: str | None = Field(
        default=None,
        description="For an approval answered with an edit: the digest of the edited call, "
        "beside `args_digest`, the call that was asked about.",
    )
    token: str | None = Field(
        default=None,
        description="The single-use pause token; only on pending pauses this caller may answer.",
        repr=False,
    )
    created_at: datetime | None = Field(default=None, description="When the turn paused.")
    asked_by: str | None = Field(
        default=None, description="The principal whose turn paused (the session's owner)."
    )
    tool_name: str | None = Field(
        default=None,
        description="The tool call the pause answers: the gated tool of an approval, or the "
        "interaction the model called. Only in a listing with `details=true`.",
    )
    tool_args: dict[str, Any] | None = Field(
        default=None, description="That call's arguments, as the model gave them."
    )
    recent_messages: list[MessageView] | None = Field(
        default=None,
        description="The last messages of the paused turn, oldest first, for context.",
    )
    readdressed: ReaddressedView | None = Field(
        default=None,
        description="The latest escalation or reassignment of the pause; null when none.",
    )

    @classmethod
    def of(cls, pause: PauseRecord, token: str | None) -> PauseView:
        seen = {name: getattr(pause, name) for name in cls.model_fields if hasattr(pause, name)}
        seen["readdressed"] = ReaddressedView.of(pause.readdressed)
        return cls(**seen, token=token, asked_by=pause.principal)


class PauseList(BaseModel):
    """One page of the pauses the caller may answer, oldest first."""

    pauses: list[PauseView]
    total: int = Field(description="How many pauses match, on every page together.")
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next page; null on the last page."
    )
