"""The webhook outbox's records: events, deliveries, leases and each destination's circuit
(docs/webhooks.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class WebhookEventType(StrEnum):
    """What a subscription may ask to be told about."""

    PAUSE_CREATED = "pause.created"
    PAUSE_EXPIRING = "pause.expiring"
    PAUSE_ANSWERED = "pause.answered"
    PAUSE_EXPIRED = "pause.expired"
    PAUSE_ABANDONED = "pause.abandoned"
    PAUSE_SUPERSEDED = "pause.superseded"
    PAUSE_ESCALATED = "pause.escalated"
    PAUSE_REASSIGNED = "pause.reassigned"
    PAUSE_APPROVED = "pause.approved"
    TURN_FAILED = "turn.failed"


class CircuitState(StrEnum):
    """Whether a destination is being sent to: see the module's docstring."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half-open"


class DeliveryState(StrEnum):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


@dataclass(frozen=True)
class FailedTurn:
    """A turn that ended in an error and published nothing: what ``turn.failed`` says.

    ``message_id`` is the run's (or the claim's) own id, so the cleanup that
    records it may run twice and record it once. ``pause_id``: the pause a
    resumed turn answered. Never a token, never the answer.
    """

    message_id: str
    session_id: str
    agent: str
    code: str
    message: str
    at: datetime
    pause_id: str | None = None


@dataclass(frozen=True)
class WebhookDelivery:
    """One event owed to one URL, and how its delivery has gone so far."""

    id: int
    message_id: str
    url: str
    type: WebhookEventType
    pause_id: str | None
    session_id: str | None
    occurred_at: datetime
    detail: dict[str, Any] | None
    state: DeliveryState
    attempts: int
    next_attempt_at: datetime
    last_status: int | None
    last_error: str | None
    delivered_at: datetime | None
    lease_id: str | None = None


@dataclass(frozen=True)
class DeliveryLease:
    """Take up to ``limit`` due deliveries to ``urls``, for ``lease_id`` until ``until``."""

    urls: Sequence[str]
    lease_id: str
    now: datetime
    until: datetime
    limit: int


@dataclass(frozen=True)
class DeliverySettlement:
    """How one attempt ended, written only while ``lease_id`` still holds the delivery.

    ``state`` pending with ``next_attempt_at``: try again then; delivered or
    failed: settled. ``error`` is in words, never a traceback or a secret.
    """

    id: int
    lease_id: str
    state: DeliveryState
    at: datetime
    next_attempt_at: datetime
    status: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class DeliveryQuery:
    """Deliveries for an operator, newest first; ``None`` filters nothing."""

    states: frozenset[DeliveryState] | None = None
    type: WebhookEventType | None = None
    url: str | None = None
    limit: int = 100


@dataclass(frozen=True)
class Destination:
    """One URL's circuit, as every worker sees it.

    ``failures``: attempts that failed since the last that delivered.
    ``opens``: how many times in a row it opened (the backoff grows with it).
    ``retry_at``: when an open circuit may be probed, or a half-open probe's
    lease lapses. ``version`` rises with every change (the compare-and-swap).
    """

    url: str
    state: CircuitState
    failures: int
    opens: int
    retry_at: datetime | None
    changed_at: datetime
    last_error: str | None
    version: int
