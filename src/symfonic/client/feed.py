"""When the live pause feed reconnects, and after how long: passing failures are retried from
`Last-Event-ID`, any other refusal is raised at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from symfonic.client.errors import ApiError
from symfonic.client.sse import FrameReader

FEED_PATH = "/v1/pauses/events"
# The service sends a keep-alive comment every 15 s: a feed silent three times
# as long has lost its connection without being told.
FEED_TIMEOUT = httpx.Timeout(30.0, read=45.0)
PASSING = frozenset({429, 503})


@dataclass
class Reconnect:
    """The feed's position and its run of failures: what the next attempt sends and waits."""

    last_event_id: str | None = None
    attempts: int = 5
    first_delay: float = 0.5
    max_delay: float = 10.0
    failures: int = field(default=0, init=False)

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self.last_event_id is not None:
            headers["Last-Event-ID"] = self.last_event_id
        return headers

    def connected(self) -> None:
        self.failures = 0

    def read(self, reader: FrameReader) -> None:
        if reader.last_id is not None:
            self.last_event_id = reader.last_id

    def failed(self, error: Exception) -> float:
        """How long to wait before the next attempt; raises ``error`` when it is final."""
        if isinstance(error, ApiError) and error.status not in PASSING:
            raise error
        self.failures += 1
        if self.failures >= self.attempts:
            raise error
        if isinstance(error, ApiError) and error.retry_after is not None:
            return float(min(error.retry_after, self.max_delay))
        return min(self.first_delay * 2 ** (self.failures - 1), self.max_delay)


def feed_params(details: bool) -> dict[str, Any]:
    return {"details": "true"} if details else {}
