"""The terminal commands' view of the HTTP API: :mod:`symfonic.client`, read as the prompts read it.

``symfonic chat``, ``pauses`` and ``webhooks`` talk to a service through
:class:`~symfonic.client.AsyncSymfonicClient`; this adds only what a terminal
needs on top. The prompts and the stream view read pauses and events as the
JSON the service sent (``Frame``, plain dicts), so what they print is the
service's own words and values. :meth:`Client.explain` turns whatever stopped
a request into one line that says what to do about it. The API key comes from
``SYMFONIC_API_KEY`` (never a command-line argument, which other users of the
machine can read) and travels only in the ``Authorization`` header.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import httpx

from symfonic.client import ApiError, AsyncSymfonicClient, PauseFilter
from symfonic.client.calls import DEFAULT_URL, MAX_PAGE, OnPendingPause
from symfonic.core.contracts.types import AnswerStatus, Event, TurnPausedEvent

__all__ = ["DEFAULT_URL", "ApiError", "Client", "Frame"]


@dataclass(frozen=True)
class Frame:
    type: str
    data: dict[str, Any]


def frame_of(event: Event) -> Frame:
    """An event as its stream frame's JSON carried it (a pause's token as ``token``)."""
    data = event.model_dump(mode="json")
    if isinstance(event, TurnPausedEvent):
        data["token"] = event.pause_token
    return Frame(event.type, data)


async def _frames(events: AsyncGenerator[Event, None]) -> AsyncIterator[Frame]:
    async with aclosing(events) as stream:
        async for event in stream:
            yield frame_of(event)


class Client(AsyncSymfonicClient):
    async def pending_pauses(self) -> list[dict[str, Any]]:
        """Every pending pause the caller may answer, oldest first, with its details
        (an approval's arguments are shown and edited), read a page at a time."""
        pauses = self.iter_pauses(PauseFilter(details=True), page_size=MAX_PAGE)
        return [pause.model_dump(mode="json") async for pause in pauses]

    def turn(
        self, session_id: str, message: str, *, on_pending_pause: OnPendingPause = "reject"
    ) -> AsyncIterator[Frame]:
        return _frames(self.stream(message, session_id, on_pending_pause=on_pending_pause))

    def answer(
        self, token: str, answer: Any, status: AnswerStatus, args_digest: str | None
    ) -> AsyncIterator[Frame]:
        """Answer a pause; ``args_digest``: the approval's digest the person was shown."""
        return _frames(self.resume_stream(token, answer, status=status, args_digest=args_digest))

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
