"""The events and results every layer speaks: plain data, never a connection, model or store
handle.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, ClassVar, Literal, TypeAlias

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ConfigDict, Field


class StopReason(enum.StrEnum):
    """Why the kernel stopped; only ``final`` can be published."""

    FINAL = "final"
    TOOL_LIMIT = "tool_limit"
    PAUSED = "paused"
    BUDGET = "budget"


class PauseState(enum.StrEnum):
    """The pause lifecycle. Transitions live in the store's statements only."""

    PENDING = "pending"
    CLAIMED = "claimed"
    PUBLISHED = "published"
    SUPERSEDED = "superseded"
    ABANDONED = "abandoned"
    EXPIRED = "expired"


class InteractionKind(enum.StrEnum):
    INPUT = "input"
    FORM = "form"
    APPROVAL = "approval"


AnswerStatus = Literal["resolved", "cancelled", "declined"]
"""How a person answered: with an answer, by cancelling (dismissing the question),
or by declining it outright. Only an MCP server's question tells the last two
apart (``cancel`` and ``decline``); for every other pause both mean no answer."""
Answer: TypeAlias = Any
"""A person's answer to a pause: any JSON value. The pause's own schema says which
shape it must have, and the resume checks it against that schema before
claiming, so no Python type narrows it further."""
ToolStatus = Literal["ok", "error", "not_dispatched", "rejected"]


class Event(BaseModel):
    """A typed stream event; ``type`` is its SSE ``event:`` name."""

    model_config = ConfigDict(frozen=True)
    type: ClassVar[str]


class TurnStartedEvent(Event):
    type: ClassVar[str] = "turn.started"
    session_id: str
    run_id: str
    agent: str
    base_revision: int
    resumed: bool


class TextDeltaEvent(Event):
    type: ClassVar[str] = "text.delta"
    text: str


class ToolCallEvent(Event):
    type: ClassVar[str] = "tool.call"
    tool_call_id: str
    name: str
    args: dict[str, Any]


class ToolResultEvent(Event):
    type: ClassVar[str] = "tool.result"
    tool_call_id: str
    name: str
    content: str
    status: ToolStatus


@dataclass(frozen=True)
class ApprovalVote:
    """One principal's approval of a pause that needs several: who gave it, and when."""

    principal: str
    at: datetime


@dataclass(frozen=True, kw_only=True)
class PauseQuestion:
    """What a pause asks, of which call, and until when: the one declaration of a pause's shape.

    Every view of a pause is this plus what that view adds: the stream's
    `TurnPausedEvent` (its token), a caller's `PauseInfo` (its
    token), the store's ``PauseRecord`` (owner, state, answer), and the HTTP
    bodies, which inherit from those. A field added here therefore reaches the
    event, the result, the row and every response at once; `asked` copies
    it from one view into the next.
    """

    pause_id: str
    interrupt_id: str
    tool_call_id: str
    kind: InteractionKind
    query: str
    response_schema: dict[str, Any]
    expires_at: datetime
    sub_agent: str | None = None
    """The agent that asked, when it is not the session's own: a delegate's pause
    is answered through its parent's, and this names the delegate."""
    args_digest: str | None = None
    """An approval's proof of what is asked: the SHA-256 of its tool and arguments as
    RFC 8785 JSON (`symfonic.core.args_digest`). Written when the pause is asked
    (and, for a call that needs several approvals, replaced by an edit, which
    proposes other arguments) and stored on its row, not recomputed from the
    checkpoint: every view of a pause (listing, feed, webhooks) reads the row alone,
    and the checkpoint that holds the arguments is gone once the pause is answered.
    ``None`` for other kinds."""
    approvals_required: int = 1
    """How many distinct principals must approve before the gated call runs; 1 for
    every pause that one answer settles. Fixed when the pause is asked."""
    approvals: tuple[ApprovalVote, ...] = ()
    """The approvals given so far, oldest first, while fewer than required: where
    the vote stands. The approval that completes the quorum claims the pause."""
    allow_requester: bool = True
    """Whether the principal whose turn paused may approve its own request."""
    server: str | None = None
    """For a question an MCP server asked mid-call: that server's name, as the
    agent's connections name it. ``None`` for every other pause."""


_QUESTION_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(PauseQuestion))


def asked(pause: PauseQuestion) -> dict[str, Any]:
    """The question's fields of any view of a pause, as keywords to build another view."""
    return {name: getattr(pause, name) for name in _QUESTION_FIELDS}


# The frame a paused turn ends with: the question, and the token that answers it.
# It is frozen like every event, through Event's model_config, which mypy does
# not read: it sees a model that is not frozen inheriting a frozen dataclass.
# (An event's docstring would be its description in the OpenAPI document.)
class TurnPausedEvent(Event, PauseQuestion):  # type: ignore[misc]
    type: ClassVar[str] = "turn.paused"
    pause_token: str = Field(repr=False)


# An approval counted toward a pause that needs several, which still waits for
# more: nothing ran, and the turn is still paused at the same pause, whose token
# the others answer with. It ends a resume's stream in place of a turn.
class ApprovalRecordedEvent(TurnPausedEvent):  # type: ignore[misc]
    type: ClassVar[str] = "approval.recorded"
    session_id: str
    base_revision: int


class ResponseCompleteEvent(Event):
    type: ClassVar[str] = "response.complete"
    answer: str
    revision: int | None = None


class ErrorEvent(Event):
    type: ClassVar[str] = "error"
    code: str
    message: str


TERMINAL_EVENTS: tuple[type[Event], ...] = (TurnPausedEvent, ResponseCompleteEvent, ErrorEvent)
STREAM_EVENTS: tuple[type[Event], ...] = (
    TurnStartedEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    *TERMINAL_EVENTS,
)


@dataclass(frozen=True)
class Escalation:
    """One step of a pause's escalation chain, stored on the pause row.

    ``after`` seconds from the pause's creation, still unanswered, it is
    re-addressed to ``audience``, once, by whichever worker's sweep comes first.
    The audience before the step keeps access unless ``keep_previous`` is false.
    A step never moves the expiry, unless ``extend`` (seconds) says so: then the
    pause expires no sooner than that long after the step.
    """

    after: float
    audience: str
    keep_previous: bool = True
    extend: float | None = None


@dataclass(frozen=True)
class PendingInteraction:
    """The interaction a paused round stopped at, as the kernel saw it."""

    kind: InteractionKind
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    query: str
    response_schema: dict[str, Any]
    audience: str | None = None
    sub_agent: str | None = None
    """For a delegate call whose agent paused: that agent's name."""
    delegated_pause_id: str | None = None
    """For a delegate call whose agent paused: the pause recorded in its own session."""
    args_digest: str | None = None
    """For an approval: the digest of the gated call (`symfonic.core.args_digest`)."""
    continuation: dict[str, Any] | None = None
    """For a tool that asked mid-call (an MCP server's question): plain JSON the
    tool needs to go on with the call once answered, kept in the checkpoint."""
    server: str | None = None
    """For an MCP server's question: the server that asked."""
    escalate: tuple[Escalation, ...] = ()
    """The steps that re-address the pause while nobody answers it."""
    approvals_required: int = 1
    """For an approval: how many distinct principals must approve (`needs_approval`)."""
    allow_requester: bool = True
    """For an approval: whether the principal whose turn paused may approve it."""
    edited_by: str | None = None
    """For an approval that needs several: who edited the call's arguments (``args``
    are then theirs, a new proposal the others approve), so the call runs as edited."""


@dataclass(frozen=True)
class KernelResult:
    """The kernel's raw done result: what a turn produced, before any projection.

    ``messages`` is the in-flight turn only (the user message onward), never the
    committed history it was run against.
    """

    stop_reason: StopReason
    messages: tuple[BaseMessage, ...]
    answer: str
    rounds: int
    model_calls: int
    tokens: int = 0
    interaction: PendingInteraction | None = None


@dataclass(frozen=True)
class KernelDone:
    """Carries the raw result out of the kernel's event stream; never framed."""

    result: KernelResult


RawEvent = Event | KernelDone
"""What the kernel's stream yields: typed events, then exactly one done."""


@dataclass(frozen=True, kw_only=True)
class PauseInfo(PauseQuestion):
    """What a caller needs to show and answer a pause: the question and its token."""

    token: str

    def __repr__(self) -> str:
        return (
            f"PauseInfo(pause_id={self.pause_id!r}, kind={self.kind.value!r}, "
            f"query={self.query!r}, token='***')"
        )


@dataclass(frozen=True)
class TurnError:
    code: str
    message: str


@dataclass(frozen=True)
class TurnResult:
    """The outcome of one turn, first or resumed."""

    status: Literal["complete", "paused", "failed"]
    session_id: str
    revision: int
    answer: str | None = None
    pause: PauseInfo | None = None
    error: TurnError | None = None
    events: tuple[Event, ...] = field(default=(), repr=False)
