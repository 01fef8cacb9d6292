"""Each webhook destination's circuit in SQL, shared by every worker: every change is a
compare-and-swap on its `version`, so two workers open a circuit once.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from symfonic.core.contracts.webhooks import CircuitState, Destination
from symfonic.storage.rows import aware
from symfonic.storage.statements import Row, Statement
from symfonic.storage.transactions import SqlTransactions
from symfonic.storage.webhooks import due_condition

COLUMNS = "url, state, failures, opens, retry_at, changed_at, last_error, version"

SWAP = Statement(
    "UPDATE symfonic_webhook_destinations SET state = :state, failures = :failures,"
    " opens = :opens, retry_at = :retry_at, changed_at = :changed_at,"
    " last_error = :last_error, version = :version + 1"
    " WHERE url = :url AND version = :version"
)
ALL = Statement(f"SELECT {COLUMNS} FROM symfonic_webhook_destinations ORDER BY url")


def destination_of(row: Row) -> Destination:
    changed = aware(row["changed_at"])
    assert changed is not None
    return Destination(
        url=row["url"],
        state=CircuitState(row["state"]),
        failures=int(row["failures"]),
        opens=int(row["opens"]),
        retry_at=aware(row["retry_at"]),
        changed_at=changed,
        last_error=row["last_error"],
        version=int(row["version"]),
    )


def _listed(urls: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    names: dict[str, Any] = {f"u{index}": url for index, url in enumerate(urls)}
    return ", ".join(f":{name}" for name in names), names


@cache
def _due(count: int) -> Statement:
    """Each URL's circuit, if an indexed probe of its deliveries finds one due."""
    listed, _ = _listed(range(count))
    return Statement(
        f"SELECT {COLUMNS} FROM symfonic_webhook_destinations dst WHERE dst.url IN ({listed})"
        " AND EXISTS (SELECT 1 FROM symfonic_webhook_deliveries"
        f" WHERE {due_condition('dst.url')}) ORDER BY dst.url"
    )


class SqlWebhookDestinations(SqlTransactions):
    """The circuits of the port's `WebhookOutbox`."""

    async def due_destinations(self, urls: Sequence[str], now: datetime) -> list[Destination]:
        if not urls:
            return []
        _, names = _listed(urls)
        rows = await self.read_rows(_due(len(urls)), {"now": now, **names}, "due_destinations")
        return [destination_of(row) for row in rows]

    async def webhook_destinations(self, urls: Sequence[str] | None = None) -> list[Destination]:
        if urls is None:
            return [
                destination_of(row) for row in await self.read_rows(ALL, {}, "webhook_destinations")
            ]
        if not urls:
            return []
        listed, names = _listed(urls)
        some = Statement(
            f"SELECT {COLUMNS} FROM symfonic_webhook_destinations"
            f" WHERE url IN ({listed}) ORDER BY url"
        )
        return [
            destination_of(row) for row in await self.read_rows(some, names, "webhook_destinations")
        ]

    async def swap_destination(self, expected: Destination, new: Destination) -> bool:
        params = {
            "url": expected.url,
            "version": expected.version,
            "state": new.state.value,
            "failures": new.failures,
            "opens": new.opens,
            "retry_at": new.retry_at,
            "changed_at": new.changed_at,
            "last_error": None if new.last_error is None else new.last_error[:500],
        }
        return await self.write_count(SWAP, params, "swap_destination") == 1
