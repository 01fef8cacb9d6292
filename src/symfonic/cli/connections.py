"""uvicorn's h11 protocol with a header deadline (slow-loris) and a connection cap that closes
one connection of whoever holds the most, so one key cannot starve everyone else
(docs/internals.md).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import h11
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from symfonic.server.transport.stream_shares import CONNECTION_EXTENSION, StreamShares

DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_MAX_CONNECTIONS = 1000


def _refusal(status: int, phrase: str, code: str, message: str, *extra: str) -> bytes:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    head = [
        f"HTTP/1.1 {status} {phrase}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *extra,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


TOO_SLOW = _refusal(
    408, "Request Timeout", "request_timeout", "the request's headers took too long to arrive"
)
TOO_MANY = _refusal(
    503,
    "Service Unavailable",
    "too_many_connections",
    "the server has as many connections as it accepts; try again",
    "Retry-After: 1",
)


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, with a header deadline and a connection cap (see the module)."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    shares: StreamShares | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_deadline: asyncio.TimerHandle | None = None
        self._waiting_since = 0.0
        self.app = self._naming_connection(self.app)

    def _naming_connection(self, app: ASGIApp) -> ASGIApp:
        """``app``, with this connection's transport in each request's scope extensions."""

        async def named(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                scope.setdefault("extensions", {})[CONNECTION_EXTENSION] = self.transport
            await app(scope, receive, send)

        return named

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_header_deadline()
        if len(self.connections) > self.max_connections and not self._make_room():
            self._refuse(TOO_MANY)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._awaiting_headers():
            # The first byte of a later request on a kept-alive connection starts its clock.
            if self._header_deadline is None:
                self._start_header_deadline()
        else:
            self._stop_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_deadline()
        super().connection_lost(exc)

    def _awaiting_headers(self) -> bool:
        return self.conn.their_state is h11.IDLE and not self.transport.is_closing()

    def _start_header_deadline(self) -> None:
        self._waiting_since = time.monotonic()
        self._header_deadline = self.loop.call_later(self.header_timeout, self._headers_late)

    def _stop_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_late(self) -> None:
        self._header_deadline = None
        if not self._awaiting_headers():
            return
        partial, _ = self.conn.trailing_data
        if partial:
            self._refuse(TOO_SLOW)
        else:
            self.transport.close()

    def _make_room(self) -> bool:
        """Close one connection of whoever holds the most (see the module); whether one was."""
        waiting = [
            other
            for other in self.connections
            if isinstance(other, BoundedH11Protocol)
            and other is not self
            and other._awaiting_headers()
        ]
        held, stream = self.shares.heaviest() if self.shares is not None else (0, None)
        if stream is not None and held > len(waiting):
            stream.displace()
            return True
        if not waiting:
            return False
        oldest = min(waiting, key=lambda other: other._waiting_since)
        oldest._stop_header_deadline()
        oldest.transport.close()
        return True

    def _refuse(self, response: bytes) -> None:
        self._stop_header_deadline()
        self.transport.write(response)
        self.transport.close()


def bounded_protocol(
    header_timeout: float, max_connections: int, shares: StreamShares | None = None
) -> type[BoundedH11Protocol]:
    """The protocol class for one server, with these limits; ``shares``: the app's streams."""
    if header_timeout <= 0:
        raise ValueError("the header timeout must be positive")
    if max_connections < 1:
        raise ValueError("the connection cap must be at least 1")
    return type(
        "BoundedH11Protocol",
        (BoundedH11Protocol,),
        {"header_timeout": header_timeout, "max_connections": max_connections, "shares": shares},
    )
