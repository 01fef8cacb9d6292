"""What the HTTP API answers, as typed models that mirror `docs/openapi.json` field for field (a
test holds them to it). Unknown fields are ignored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from symfonic.core.contracts.run_events import RunState
from symfonic.core.contracts.types import PauseQuestion, PauseState
from symfonic.core.contracts.webhooks import (
    CircuitState,
    DeliveryState,
    WebhookEventType,
)


class ApiModel(BaseModel):
    """What every response model shares: frozen, and blind to fields it does not know."""

    model_config = ConfigDict(frozen=True, extra="ignore")


class SessionCreated(ApiModel):
    """A session just created: its id, its agent and revision 0."""

    session_id: str
    agent: str
    revision: int
    status: Literal["idle"]


class ToolCall(ApiModel):
    id: str
    name: str
    args: dict[str, Any]


class Message(ApiModel):
    """One committed message of a session."""

    role: str
    content: str | list[Any]
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    status: str | None = None


class Readdressed(ApiModel):
    """The latest time a pause was handed to another audience: ``escalated`` by its
    chain (``after`` seconds from its creation), or ``reassigned`` by an operator."""

    kind: Literal["escalated", "reassigned"]
    previous: str | None
    audience: str
    at: datetime
    by: str | None = None
    reason: str | None = None
    after: float | None = None


class Pause(ApiModel, PauseQuestion, frozen=True):  # type: ignore[misc]
    """A pause as the caller may see it; ``token`` only while the caller may answer it."""

    session_id: str
    agent: str
    audience: str | None
    state: PauseState
    answered_by: str | None = None
    answered_at: datetime | None = None
    edited_args_digest: str | None = None
    token: str | None = Field(default=None, repr=False)
    created_at: datetime | None = None
    asked_by: str | None = None
    tool_name: str | None = None
    tool_args: dict[str, Any] | None = None
    recent_messages: list[Message] | None = None
    readdressed: Readdressed | None = None


class PausePage(ApiModel):
    """One page of a listing: ``total`` counts every page; ``next_cursor`` is None on the last."""

    pauses: list[Pause]
    total: int
    next_cursor: str | None


class Session(ApiModel):
    """A session as its owner reads it: its agent, revision, status, pending pause and messages."""

    session_id: str
    agent: str
    revision: int
    status: Literal["idle", "running", "paused"]
    metadata: dict[str, Any]
    parent_session_id: str | None = None
    pending_pause: Pause | None = None
    messages: list[Message]


class RunStarted(ApiModel):
    """A turn or resume accepted to run in the background: its id and where its events are."""

    run_id: str
    events_url: str


class ErrorDetail(ApiModel):
    code: str
    message: str


class RunOutcome(ApiModel):
    """How a run ended; never a pause's token (its ``turn.paused`` event carries that)."""

    status: Literal["complete", "paused", "failed"]
    revision: int
    answer: str | None = None
    pause_id: str | None = None
    error: ErrorDetail | None = None


class Run(ApiModel):
    """A background run as its viewers see it; ``outcome`` once it has ended."""

    run_id: str
    session_id: str
    state: RunState
    outcome: RunOutcome | None = None
    created_at: datetime
    ended_at: datetime | None = None


class Delivery(ApiModel):
    """One webhook event owed to one URL, and how its delivery went."""

    id: int
    message_id: str
    url: str
    type: WebhookEventType
    state: DeliveryState
    pause_id: str | None
    session_id: str | None
    occurred_at: datetime
    attempts: int
    next_attempt_at: datetime
    last_status: int | None
    last_error: str | None
    delivered_at: datetime | None


class DeliveryList(ApiModel):
    deliveries: list[Delivery]


class Destination(ApiModel):
    """One webhook URL's circuit: closed, open until ``retry_at``, or half-open."""

    url: str
    state: CircuitState
    failures: int
    retry_at: datetime | None
    changed_at: datetime
    last_error: str | None
    summary: str


class DestinationList(ApiModel):
    destinations: list[Destination]


class Health(ApiModel):
    """Whether the service serves: ``GET /v1/health``."""

    status: Literal["ok"]
    audit_unsealed: int = 0
    audit_unsealed_seconds: float = 0.0
