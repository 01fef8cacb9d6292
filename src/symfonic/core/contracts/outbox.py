"""The webhook outbox: the storage role the webhook dispatcher drives.

A delivery is owed in the transaction of the change that caused it, then sent and
settled only under its lease.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from symfonic.core.contracts.pauses import PauseRecord
from symfonic.core.contracts.webhooks import (
    DeliveryLease,
    DeliveryQuery,
    DeliverySettlement,
    Destination,
    WebhookDelivery,
    WebhookEventType,
)


@dataclass(frozen=True)
class LeasedDelivery:
    """A delivery this worker now holds, with its pause's row as it is now (if any)."""

    delivery: WebhookDelivery
    pause: PauseRecord | None


class WebhookOutbox(Protocol):
    """Subscriptions, the deliveries owed to them, and each destination's circuit."""

    async def register_webhook(self, url: str, events: Sequence[WebhookEventType]) -> None:
        """``url`` now wants exactly ``events``, from the next change on; one transaction."""
        ...

    async def announce_expiring(self, now: datetime, lead_seconds: float) -> int:
        """Owe ``pause.expiring`` for pending pauses whose expiry is near, once each.

        Near: within ``lead_seconds``, or a tenth of the pause's lifetime if that is
        shorter, and not yet passed. How many deliveries this call added.
        """
        ...

    async def due_destinations(self, urls: Sequence[str], now: datetime) -> list[Destination]:
        """The circuits of those of ``urls`` with a delivery due and unleased, by URL.

        One read: an indexed probe of each URL's deliveries.
        """
        ...

    async def lease_deliveries(self, lease: DeliveryLease) -> list[LeasedDelivery]:
        """Take due deliveries for a while, oldest first, skipping any another worker holds."""
        ...

    async def settle_delivery(self, settlement: DeliverySettlement) -> bool:
        """Record an attempt's end; false when the lease no longer holds (nothing written)."""
        ...

    async def settle_deliveries(self, settlements: Sequence[DeliverySettlement]) -> list[bool]:
        """Record many attempts' ends in one transaction; each as `settle_delivery`."""
        ...

    async def prune_failed_deliveries(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` deliveries that failed before ``before``; how many."""
        ...

    async def webhook_destinations(self, urls: Sequence[str] | None = None) -> list[Destination]:
        """The circuits of ``urls`` (``None``: every destination), by URL."""
        ...

    async def swap_destination(self, expected: Destination, new: Destination) -> bool:
        """Write ``new`` if the circuit is still at ``expected.version``; false: it moved."""
        ...

    async def list_deliveries(self, query: DeliveryQuery) -> list[WebhookDelivery]: ...

    async def resend_delivery(self, delivery_id: int, now: datetime) -> WebhookDelivery | None:
        """A settled delivery back to pending, attempts 0, same message id; ``None``: no such."""
        ...
