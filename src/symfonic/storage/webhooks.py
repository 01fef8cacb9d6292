"""The webhook outbox in SQL.

An event is owed in the transaction that decides it, and sending is shared by per-URL
leases, settled only under the lease that sent it (docs/webhooks.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

from symfonic.core.contracts.outbox import LeasedDelivery
from symfonic.core.contracts.webhooks import (
    DeliveryLease,
    DeliveryQuery,
    DeliverySettlement,
    DeliveryState,
    FailedTurn,
    WebhookDelivery,
    WebhookEventType,
)
from symfonic.storage.rows import PAUSE_COLUMNS, aware, pause_of
from symfonic.storage.statements import (
    UNSYNCED,
    UNSYNCED_COLUMN,
    Dialect,
    Params,
    Row,
    Statement,
    first,
    json_text,
    json_value,
)
from symfonic.storage.transactions import Connection, SqlTransactions

DELIVERY_COLUMNS = (
    "id, message_id, url, type, pause_id, session_id, occurred_at, detail, state, attempts,"
    " next_attempt_at, last_status, last_error, delivered_at, lease_id"
)

FORGET_SUBSCRIPTIONS = Statement("DELETE FROM symfonic_webhook_subscriptions WHERE url = :url")
SUBSCRIBE = Statement(
    "INSERT INTO symfonic_webhook_subscriptions (url, event_type) VALUES (:url, :event_type)"
    # A worker registering the same URL at the same moment has inserted it already.
    " ON CONFLICT (url, event_type) DO NOTHING"
)

_OWE = (
    "INSERT INTO symfonic_webhook_deliveries (message_id, url, type, pause_id, session_id,"
    " occurred_at, detail, state, attempts, next_attempt_at)"
)
OWE_FAILED_TURN = Statement(
    f"{_OWE} SELECT :message_id, s.url, s.event_type, :pause_id, :session_id, :at, :detail,"
    " 'pending', 0, :at FROM symfonic_webhook_subscriptions s"
    " WHERE s.event_type = 'turn.failed' ON CONFLICT (url, message_id) DO NOTHING"
)

# Near its expiry: within the lead (the horizon), and within a tenth of its lifetime.
_NEAR = {
    Dialect.SQLITE: "(julianday(p.expires_at) - julianday(:now)) * 10"
    " <= julianday(p.expires_at) - julianday(p.created_at)",
    Dialect.POSTGRESQL: "EXTRACT(EPOCH FROM (p.expires_at - CAST(:now AS TIMESTAMPTZ))) * 10"
    " <= EXTRACT(EPOCH FROM (p.expires_at - p.created_at))",
}
OWE_EXPIRING = {
    dialect: Statement(
        f"{_OWE} SELECT 'msg_pause_expiring_' || p.pause_id, s.url, s.event_type, p.pause_id,"
        " p.session_id, :now, NULL, 'pending', 0, :now"
        " FROM symfonic_pauses p JOIN symfonic_webhook_subscriptions s"
        " ON s.event_type = 'pause.expiring'"
        " WHERE p.state = 'pending' AND p.expires_at > :now AND p.expires_at <= :horizon"
        # A delegate's own pause is announced through its parent's only.
        " AND p.parent_session_id IS NULL"
        f" AND {near} ON CONFLICT (url, message_id) DO NOTHING"
    )
    for dialect, near in _NEAR.items()
}

_SETTLE = (
    "UPDATE symfonic_webhook_deliveries SET state = :state, next_attempt_at = :next_attempt_at,"
    " last_status = :status, last_error = :error, delivered_at = :delivered_at,"
    " lease_id = NULL, leased_until = NULL WHERE id = :id AND lease_id = :lease_id"
)
SETTLE = {
    Dialect.SQLITE: Statement(_SETTLE),
    Dialect.POSTGRESQL: Statement(f"{UNSYNCED} {_SETTLE} RETURNING {UNSYNCED_COLUMN}"),
}
# A closed circuit for a URL a worker registers, unless it has one
# (see `symfonic.storage.webhook_destinations`).
ADD_DESTINATION = Statement(
    "INSERT INTO symfonic_webhook_destinations (url, state, failures, opens, retry_at,"
    " changed_at, last_error, version) VALUES (:url, 'closed', 0, 0, NULL, :now, NULL, 0)"
    " ON CONFLICT (url) DO NOTHING"
)
RESEND = Statement(
    "UPDATE symfonic_webhook_deliveries SET state = 'pending', attempts = 0,"
    " next_attempt_at = :now, delivered_at = NULL, lease_id = NULL, leased_until = NULL"
    " WHERE id = :id AND state IN ('failed', 'delivered')"
)
DELIVERY = Statement(f"SELECT {DELIVERY_COLUMNS} FROM symfonic_webhook_deliveries WHERE id = :id")


def _listed(prefix: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    """``:prefix0, :prefix1, …`` for an ``IN`` list, and their values."""
    names = {f"{prefix}{index}": value for index, value in enumerate(values)}
    return ", ".join(f":{name}" for name in names), names


def due_condition(urls: str) -> str:
    return (
        f"url IN ({urls}) AND state = 'pending' AND next_attempt_at <= :now"
        " AND (leased_until IS NULL OR leased_until < :now)"
    )


_FAILED_BEFORE = (
    "SELECT id FROM symfonic_webhook_deliveries WHERE state = 'failed'"
    " AND next_attempt_at < :before ORDER BY id LIMIT :limit"
)
PRUNE_FAILED = Statement(
    f"DELETE FROM symfonic_webhook_deliveries WHERE id IN ({_FAILED_BEFORE}) AND state = 'failed'"
)


@cache
def _lease(dialect: Dialect, count: int) -> Statement:
    urls, _ = _listed("u", range(count))
    due = due_condition(urls)
    taken = "lease_id = :lease_id, leased_until = :until, attempts = attempts + 1"
    if dialect is Dialect.SQLITE:
        return Statement(
            f"UPDATE symfonic_webhook_deliveries SET {taken} WHERE id IN"
            f" (SELECT id FROM symfonic_webhook_deliveries WHERE {due}"
            " ORDER BY next_attempt_at, id LIMIT :limit)"
            f" RETURNING {DELIVERY_COLUMNS}"
        )
    # PostgreSQL may run an ``IN (SELECT … LIMIT)`` more than once and take more than
    # the limit; a materialised CTE picks the rows once.
    returned = ", ".join(
        f"symfonic_webhook_deliveries.{column.strip()}" for column in DELIVERY_COLUMNS.split(",")
    )
    return Statement(
        f"{UNSYNCED}, picked AS MATERIALIZED (SELECT id FROM symfonic_webhook_deliveries"
        f" WHERE {due} ORDER BY next_attempt_at, id LIMIT :limit FOR UPDATE SKIP LOCKED)"
        f" UPDATE symfonic_webhook_deliveries SET {taken} FROM picked"
        f" WHERE symfonic_webhook_deliveries.id = picked.id"
        f" RETURNING {returned}, {UNSYNCED_COLUMN}"
    )


def delivery_of(row: Row) -> WebhookDelivery:
    occurred, next_attempt = aware(row["occurred_at"]), aware(row["next_attempt_at"])
    assert occurred is not None and next_attempt is not None
    return WebhookDelivery(
        id=int(row["id"]),
        message_id=row["message_id"],
        url=row["url"],
        type=WebhookEventType(row["type"]),
        pause_id=row["pause_id"],
        session_id=row["session_id"],
        occurred_at=occurred,
        detail=json_value(row["detail"]),
        state=DeliveryState(row["state"]),
        attempts=int(row["attempts"]),
        next_attempt_at=next_attempt,
        last_status=row["last_status"],
        last_error=row["last_error"],
        delivered_at=aware(row["delivered_at"]),
        lease_id=row["lease_id"],
    )


# PostgreSQL settles a batch with one statement, one round trip: the batch as arrays.
_SETTLE_ARRAYS = (
    "CAST(:ids AS BIGINT[]), CAST(:leases AS TEXT[]), CAST(:states AS TEXT[]),"
    " CAST(:nexts AS TIMESTAMPTZ[]), CAST(:statuses AS INTEGER[]), CAST(:errors AS TEXT[]),"
    " CAST(:delivered AS TIMESTAMPTZ[])"
)
SETTLE_BATCH = Statement(
    f"{UNSYNCED}, v AS (SELECT * FROM unnest({_SETTLE_ARRAYS})"
    " AS v(id, lease_id, state, next_attempt_at, status, error, delivered_at))"
    " UPDATE symfonic_webhook_deliveries d SET state = v.state,"
    " next_attempt_at = v.next_attempt_at, last_status = v.status, last_error = v.error,"
    " delivered_at = v.delivered_at, lease_id = NULL, leased_until = NULL"
    f" FROM v WHERE d.id = v.id AND d.lease_id = v.lease_id RETURNING d.id, {UNSYNCED_COLUMN}"
)


class SqlWebhookDeliveries(SqlTransactions):
    """The deliveries of the port's `WebhookOutbox`."""

    async def register_webhook(self, url: str, events: Sequence[WebhookEventType]) -> None:
        now = datetime.now(UTC)

        async def replace(connection: Connection) -> None:
            await connection.count(FORGET_SUBSCRIPTIONS, {"url": url})
            await connection.each(SUBSCRIBE, [{"url": url, "event_type": e.value} for e in events])
            await connection.count(ADD_DESTINATION, {"url": url, "now": now})

        await self.transaction(replace, "register_webhook")

    async def announce_expiring(self, now: datetime, lead_seconds: float) -> int:
        params = {"now": now, "horizon": now + timedelta(seconds=lead_seconds)}
        return await self.write_count(OWE_EXPIRING[self.dialect], params, "announce_expiring")

    async def lease_deliveries(self, taking: DeliveryLease) -> list[LeasedDelivery]:
        if not taking.urls:
            return []
        _, names = _listed("u", taking.urls)
        params = {
            "now": taking.now,
            "until": taking.until,
            "lease_id": taking.lease_id,
            "limit": taking.limit,
            **names,
        }
        rows = await self.write_rows(
            _lease(self.dialect, len(taking.urls)), params, "lease_deliveries"
        )
        deliveries = sorted((delivery_of(row) for row in rows), key=lambda d: d.id)
        pause_ids = sorted({d.pause_id for d in deliveries if d.pause_id is not None})
        pauses = {}
        if pause_ids:
            listed, ids = _listed("p", pause_ids)
            read = Statement(
                f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses WHERE pause_id IN ({listed})"
            )
            pauses = {
                row["pause_id"]: pause_of(row)
                for row in await self.read_rows(read, ids, "lease_deliveries")
            }
        return [LeasedDelivery(d, pauses.get(d.pause_id or "")) for d in deliveries]

    async def settle_delivery(self, settlement: DeliverySettlement) -> bool:
        return (
            await self.write_count(
                SETTLE[self.dialect], _settle_params(settlement), "settle_delivery"
            )
            == 1
        )

    async def settle_deliveries(self, settlements: Sequence[DeliverySettlement]) -> list[bool]:
        """Each settlement under its own lease, all in one transaction (one commit, not many)."""
        if not settlements:
            return []
        if self.dialect is Dialect.POSTGRESQL:
            return await _settle_batch(self, settlements)
        statement = SETTLE[self.dialect]

        async def each(connection: Connection) -> list[bool]:
            return [
                await connection.count(statement, _settle_params(settlement)) == 1
                for settlement in settlements
            ]

        return await self.transaction(each, "settle_deliveries")

    async def prune_failed_deliveries(self, before: datetime, limit: int) -> int:
        return await self.write_count(
            PRUNE_FAILED, {"before": before, "limit": limit}, "prune_failed_deliveries"
        )

    async def list_deliveries(self, query: DeliveryQuery) -> list[WebhookDelivery]:
        where, params = ["1 = 1"], dict[str, Any]({"limit": query.limit})
        if query.states is not None:
            listed, names = _listed("s", sorted(state.value for state in query.states))
            where.append(f"state IN ({listed})" if names else "1 = 0")
            params.update(names)
        if query.type is not None:
            where.append("type = :type")
            params["type"] = query.type.value
        if query.url is not None:
            where.append("url = :url")
            params["url"] = query.url
        read = Statement(
            f"SELECT {DELIVERY_COLUMNS} FROM symfonic_webhook_deliveries"
            f" WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT :limit"
        )
        return [delivery_of(row) for row in await self.read_rows(read, params, "list_deliveries")]

    async def resend_delivery(self, delivery_id: int, now: datetime) -> WebhookDelivery | None:
        async def reset_then_read(connection: Connection) -> WebhookDelivery | None:
            await connection.count(RESEND, {"id": delivery_id, "now": now})
            row = first(await connection.rows(DELIVERY, {"id": delivery_id}))
            return None if row is None else delivery_of(row)

        return await self.transaction(reset_then_read, "resend_delivery")


def failed_turn_params(failure: FailedTurn) -> Params:
    detail = {"agent": failure.agent, "code": failure.code, "message": failure.message}
    return {
        "message_id": f"msg_turn_failed_{failure.message_id}",
        "pause_id": failure.pause_id,
        "session_id": failure.session_id,
        "at": failure.at,
        "detail": json_text(detail),
    }


async def owe_failed_turn(connection: Connection, failure: FailedTurn) -> None:
    """Owe ``turn.failed`` inside the transaction that ends the failed turn."""
    await connection.count(OWE_FAILED_TURN, failed_turn_params(failure))


def _settle_params(settlement: DeliverySettlement) -> Params:
    delivered = settlement.state is DeliveryState.DELIVERED
    return {
        "id": settlement.id,
        "lease_id": settlement.lease_id,
        "state": settlement.state.value,
        "next_attempt_at": settlement.next_attempt_at,
        "status": settlement.status,
        "error": None if settlement.error is None else settlement.error[:500],
        "delivered_at": settlement.at if delivered else None,
    }


async def _settle_batch(
    store: SqlTransactions, settlements: Sequence[DeliverySettlement]
) -> list[bool]:
    each = [_settle_params(settlement) for settlement in settlements]
    columns = {
        "ids": "id",
        "leases": "lease_id",
        "states": "state",
        "nexts": "next_attempt_at",
        "statuses": "status",
        "errors": "error",
        "delivered": "delivered_at",
    }
    arrays = {name: [one[column] for one in each] for name, column in columns.items()}
    settled = {
        int(row["id"]) for row in await store.write_rows(SETTLE_BATCH, arrays, "settle_deliveries")
    }
    return [settlement.id in settled for settlement in settlements]
