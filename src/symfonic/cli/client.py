"""A small client for symfonic's HTTP API, for ``symfonic chat``, ``pauses`` and ``webhooks``.

The API key comes from ``SYMFONIC_API_KEY`` (never a command-line argument,
which other users of the machine can read) and travels only in the
``Authorization`` header. Streams are read as SSE frames and handed back as
``(event type, data)`` pairs. :meth:`Client.explain` turns whatever stopped a
request into one line that says what to do about it.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

DEFAULT_URL = "http://127.0.0.1:8000"
# The largest page the listing gives: fewest requests to read every pause.
PAGE_LIMIT = 500


@dataclass(frozen=True)
class Frame:
    type: str
    data: dict[str, Any]


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


def _error_of(response: httpx.Response) -> ApiError:
    try:
        error = response.json()["error"]
        return ApiError(response.status_code, str(error["code"]), str(error["message"]))
    except (ValueError, KeyError, TypeError):
        return ApiError(response.status_code, "http_error", response.text[:200])


async def _frames(response: httpx.Response) -> AsyncIterator[Frame]:
    event, data_lines = "message", list[str]()
    async for line in response.aiter_lines():
        if line == "":
            if data_lines:
                yield Frame(event, json.loads("\n".join(data_lines)))
            event, data_lines = "message", []
        elif line.startswith("event:"):
            event = line[len("event:") :].strip()
        elif line.startswith("data:"):
            data_lines.append(line[len("data:") :].lstrip())
    if data_lines:
        yield Frame(event, json.loads("\n".join(data_lines)))


class Client:
    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("SYMFONIC_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.base_url, self.has_key = base_url, bool(key)
        self._http = httpx.AsyncClient(
            base_url=base_url,
            headers=headers,
            transport=transport,
            timeout=httpx.Timeout(30, read=None),
        )

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.aclose()

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = await self._http.request(method, path, **kwargs)
        if response.status_code >= 400:
            raise _error_of(response)
        return response.json()

    async def create_session(self, agent: str | None = None) -> dict[str, Any]:
        body = {"agent": agent} if agent else {}
        result: dict[str, Any] = await self._json("POST", "/v1/sessions", json=body)
        return result

    async def pending_pauses(self) -> list[dict[str, Any]]:
        """Every pending pause the caller may answer, oldest first, a page at a time.

        The listing hands out pages; following each page's ``next_cursor`` until
        it is null reaches them all, however many wait. Each comes with its
        details, so an approval's arguments can be shown and edited.
        """
        pauses: list[dict[str, Any]] = []
        params: dict[str, Any] = {"state": "pending", "limit": PAGE_LIMIT, "details": "true"}
        while True:
            page = await self._json("GET", "/v1/pauses", params=params)
            pauses += page["pauses"]
            if page.get("next_cursor") is None:
                return pauses
            params["cursor"] = page["next_cursor"]

    async def webhook_deliveries(
        self, states: list[str] | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"limit": limit}
        if states:
            params["state"] = states
        result = await self._json("GET", "/v1/webhooks/deliveries", params=params)
        return list(result["deliveries"])

    async def webhook_destinations(self) -> list[dict[str, Any]]:
        result = await self._json("GET", "/v1/webhooks/destinations")
        return list(result["destinations"])

    async def resend_delivery(self, delivery_id: int) -> dict[str, Any]:
        result: dict[str, Any] = await self._json(
            "POST", f"/v1/webhooks/deliveries/{delivery_id}/resend"
        )
        return result

    async def _stream(self, path: str, body: dict[str, Any]) -> AsyncIterator[Frame]:
        headers = {"Accept": "text/event-stream"}
        async with self._http.stream("POST", path, json=body, headers=headers) as response:
            if response.status_code >= 400:
                await response.aread()
                raise _error_of(response)
            async for frame in _frames(response):
                yield frame

    def turn(self, session_id: str, message: str, **options: Any) -> AsyncIterator[Frame]:
        return self._stream(f"/v1/sessions/{session_id}/turns", {"message": message, **options})

    def resume(
        self, token: str, answer: Any, status: str = "resolved", args_digest: str | None = None
    ) -> AsyncIterator[Frame]:
        """Answer a pause; ``args_digest``: the approval's digest the person was shown."""
        body = {"token": token, "answer": answer, "status": status}
        if args_digest is not None:
            body["args_digest"] = args_digest
        return self._stream("/v1/resume", body)

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
