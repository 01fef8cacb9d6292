"""What the HTTP API answers, as typed models: a pause's shapes are the server's own, from
`symfonic.core.contracts.pause_views`; the rest mirror `docs/openapi.json` (a test checks)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from symfonic.core.contracts.pause_views import (
    MessageView,
    PauseList,
    PauseView,
    ReaddressedView,
    ToolCallView,
)
from symfonic.core.contracts.run_events import RunState
from symfonic.core.contracts.webhooks import (
    CircuitState,
    DeliveryState,
    WebhookEventType,
)

# The pause's shapes are the server's own; the client names them as it always has.
ToolCall = ToolCallView
Message = MessageView
Readdressed = ReaddressedView
Pause = PauseView
PausePage = PauseList


class ApiModel(BaseModel):
    """What every response model shares: frozen, and blind to fields it does not know."""

    model_config = ConfigDict(frozen=True, extra="ignore")


class SessionCreated(ApiModel):
    """A session just created: its id, its agent and revision 0."""

    session_id: str
    agent: str
    revision: int
    status: Literal["idle"]


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
