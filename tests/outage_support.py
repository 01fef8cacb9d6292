"""A store method that finds the store away for its first calls, as adapters say it.

Its error carries a driver's words, as a server restart gives them, so that a
test can check those words never reach a client; ``committed`` lets the real
write take effect first, as when a commit's reply is lost with the connection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from symfonic.core.contracts.errors import StoreUnavailable

DRIVER = "CannotConnectNowError: the database system is shutting down"


class Outage:
    """Stands in for one store method: its first ``failures`` calls find the store away."""

    def __init__(
        self,
        real: Callable[..., Awaitable[Any]],
        failures: float,
        *,
        committed: bool = False,
        error: Exception | None = None,
    ) -> None:
        self.real = real
        self.failures = failures
        self.committed = committed
        self.error = error
        self.calls: list[datetime] = []

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(datetime.now(UTC))
        if len(self.calls) <= self.failures:
            if self.committed:
                await self.real(*args, **kwargs)
            raise self.error or StoreUnavailable(f"the store could not complete a write: {DRIVER}")
        return await self.real(*args, **kwargs)
