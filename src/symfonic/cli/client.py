"""The terminal commands' view of `symfonic.client`: pauses and events as the JSON the service
sent, each turn followed with reconnects, and `Client.explain` saying in one line what stopped a
request. The key comes from ``SYMFONIC_API_KEY`` only, never a command-line argument.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import httpx

from symfonic.client import ApiError, AsyncSymfonicClient, PauseFilter, RunStarted
from symfonic.client.calls import DEFAULT_URL, MAX_PAGE, OnPendingPause
from symfonic.core.contracts.types import (
    AnswerStatus,
    ApprovalRecordedEvent,
    Event,
    TurnPausedEvent,
)

__all__ = ["DEFAULT_URL", "ApiError", "Client", "EventFrame"]

# Failed reconnections in a row before a run's events are given up on: with the
# feed's backoff (0.5 s doubling to 10 s) about half a minute, time for a
# restarted service to come back.
RECONNECTS = 8


@dataclass(frozen=True)
class EventFrame:
    type: str
    data: dict[str, Any]


def frame_of(event: Event) -> EventFrame:
    """An event as its stream frame's JSON carried it (a pause's token as ``token``)."""
    data = event.model_dump(mode="json")
    if isinstance(event, TurnPausedEvent):
        data["token"] = event.pause_token
    return EventFrame(event.type, data)


async def _frames(events: AsyncGenerator[Event, None]) -> AsyncIterator[EventFrame]:
    async with aclosing(events) as stream:
        async for event in stream:
            yield frame_of(event)


class Client(AsyncSymfonicClient):
    async def pending_pauses(self) -> list[dict[str, Any]]:
        """Every pending pause the caller may answer, oldest first, with its details
        (an approval's arguments are shown and edited), read a page at a time."""
        pauses = self.iter_pauses(PauseFilter(details=True), page_size=MAX_PAGE)
        return [pause.model_dump(mode="json") async for pause in pauses]

    on_reconnect: Callable[[Exception], None] | None = None
    """Told of each lost connection to a run's events that is being reopened."""

    def turn(
        self, session_id: str, message: str, *, on_pending_pause: OnPendingPause = "reject"
    ) -> AsyncIterator[EventFrame]:
        """A turn run in the background and followed to its end (`_followed`)."""
        return _frames(
            self._followed(
                lambda: self.start(message, session_id, on_pending_pause=on_pending_pause)
            )
        )

    def answer(
        self, token: str, answer: Any, status: AnswerStatus, args_digest: str | None
    ) -> AsyncIterator[EventFrame]:
        """Answer a pause, the resumed turn run in the background and followed to its
        end; ``args_digest``: the approval's digest the person was shown."""
        return _frames(
            self._followed(
                lambda: self.start_resume(token, answer, status=status, args_digest=args_digest)
            )
        )

    async def _followed(
        self, starting: Callable[[], Awaitable[RunStarted | ApprovalRecordedEvent]]
    ) -> AsyncGenerator[Event, None]:
        """The events of the run ``starting`` starts, each once: a connection that
        drops (a restarted service, a proxy that cuts streams) is reopened after the
        last event read, and ``on_reconnect`` is told. Refusals raise before any
        event; an approval only counted starts no run and is its one event."""
        started = await starting()
        if isinstance(started, ApprovalRecordedEvent):
            yield started
            return
        events = self.run_events(
            started.run_id, attempts=RECONNECTS, on_reconnect=self.on_reconnect
        )
        async with aclosing(events) as stream:
            async for event in stream:
                yield event

    def explain(self, error: Exception) -> str:
        """What stopped a request, and what the person can do about it, in one line."""
        url = self.base_url
        if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout | httpx.UnsupportedProtocol):
            return (
                f"cannot reach a symfonic service at {url}; start one with 'symfonic serve', "
                "or pass --url with the address it serves on"
            )
        if isinstance(error, httpx.TransportError):
            return f"the connection to {url} failed ({type(error).__name__}); is it still running?"
        if not isinstance(error, ApiError):
            return str(error)
        if error.status == 401 and not self.has_key:
            return f"the service at {url} needs an API key: set SYMFONIC_API_KEY to your key"
        if error.status == 401:
            return (
                f"the service at {url} does not accept the key in SYMFONIC_API_KEY; "
                "set it to a key the service was started with"
            )
        if error.code == "unknown_agent":
            return f"{error.message}; name one of them with --agent"
        if error.status == 503:
            return f"the service at {url} cannot reach its store right now; try again shortly"
        if error.code in ("already_answered", "already_claimed"):
            return f"{error.message}; yours was not used"
        return f"the service refused: {error.message}"
