"""The HTTP API's response bodies that the server sends and `symfonic.client` reads, defined
once: frozen, and blind to fields they do not know, so a newer service breaks no client."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from symfonic.core.contracts.pause_views import MessageView, PauseView
from symfonic.core.contracts.run_events import RunRecord, RunState
from symfonic.core.contracts.webhooks import (
    CircuitState,
    DeliveryState,
    Destination,
    WebhookDelivery,
    WebhookEventType,
)


class WireModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class ErrorDetail(WireModel):
    code: str = Field(description="Stable machine-readable code, e.g. `session_paused`.")
    message: str = Field(description="What went wrong, for a person.")


class SessionCreated(WireModel):
    session_id: str
    agent: str
    revision: int
    status: Literal["idle"]


SessionStatus = Literal["idle", "running", "paused"]


class SessionView(WireModel):
    session_id: str
    agent: str
    revision: int
    status: SessionStatus
    metadata: dict[str, Any]
    parent_session_id: str | None = Field(
        default=None,
        description="For a delegate agent's session: the session whose turn delegated to it. "
        "Its pauses are answered through that session's pause.",
    )
    pending_pause: PauseView | None = None
    messages: list[MessageView]


class Health(WireModel):
    status: Literal["ok"]
    audit_unsealed: int = Field(
        0, description="Audit records committed but not yet given their place in the chain."
    )
    audit_unsealed_seconds: float = Field(
        0.0, description="How long the oldest of them has waited (about a second at most)."
    )


class RunStarted(WireModel):
    """A turn or resume accepted to run in the background (202)."""

    run_id: str = Field(description="The run's id, as in its `turn.started` event.")
    events_url: str = Field(
        description="Its events as SSE, from the start or from `Last-Event-ID`, on any worker."
    )

    @classmethod
    def of(cls, run_id: str) -> RunStarted:
        return cls(run_id=run_id, events_url=f"/v1/runs/{run_id}/events")


class RunOutcome(WireModel):
    """How a run ended; a pause's token is never here (its events carry it to who may
    answer, as does `GET /v1/sessions/{id}`)."""

    status: Literal["complete", "paused", "failed"]
    revision: int
    answer: str | None = None
    pause_id: str | None = None
    error: ErrorDetail | None = None


# The states a client is shown: a rolled-back run (``forgotten``) is shown to nobody.
ShownState = Literal["queued", "running", "paused", "complete", "failed", "cancelled"]


class RunView(WireModel):
    run_id: str
    session_id: str
    state: ShownState = Field(
        description="`queued`: a message sent with `on_busy: enqueue`, waiting for its "
        "session (a cancel takes it out of the queue). `failed` also for a run whose "
        "worker stopped before it ended."
    )
    outcome: RunOutcome | None = Field(
        default=None, description="Once it has ended, how (none for a run its worker lost)."
    )
    created_at: datetime
    ended_at: datetime | None = None

    @classmethod
    def of(cls, record: RunRecord, state: RunState) -> RunView:
        outcome = record.outcome
        return cls(
            run_id=record.run_id,
            session_id=record.session_id,
            state=cast(ShownState, state.value),
            outcome=None if outcome is None else RunOutcome.model_validate(outcome),
            created_at=record.created_at,
            ended_at=record.ended_at,
        )


class DeliveryView(WireModel):
    """One event owed to one URL, and how its delivery went."""

    id: int
    message_id: str = Field(description="the `webhook-id` header, the same on every attempt")
    url: str
    type: WebhookEventType
    state: DeliveryState
    pause_id: str | None
    session_id: str | None
    occurred_at: datetime
    attempts: int
    next_attempt_at: datetime
    last_status: int | None = Field(description="the receiver's last HTTP status, if it answered")
    last_error: str | None = Field(description="why the last attempt did not deliver, in words")
    delivered_at: datetime | None

    @classmethod
    def of(cls, delivery: WebhookDelivery) -> DeliveryView:
        return cls.model_validate(delivery, from_attributes=True)


class DeliveryList(WireModel):
    deliveries: list[DeliveryView]


class DestinationView(WireModel):
    """One URL's circuit, as every worker follows it."""

    url: str
    state: CircuitState = Field(
        description="closed: sent to; open: left alone until retry_at; half-open: one probe out"
    )
    failures: int = Field(description="failed attempts since the last that delivered")
    retry_at: datetime | None = Field(description="when an open circuit is tried again")
    changed_at: datetime = Field(description="when the circuit last changed state")
    last_error: str | None = Field(description="why the last failed attempt failed, in words")
    summary: str = Field(description="all of it in one sentence")

    @classmethod
    def of(cls, circuit: Destination, summary: str) -> DestinationView:
        return cls.model_validate({**asdict(circuit), "summary": summary})


class DestinationList(WireModel):
    destinations: list[DestinationView]
