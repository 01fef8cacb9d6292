"""`AsyncSymfonicClient`: the HTTP API from asyncio (or trio), on `httpx.AsyncClient`; use it as
an `async with` block.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Any, TypeVar

import anyio
import httpx

from symfonic.client import calls
from symfonic.client.calls import (
    DEFAULT_TIMEOUT,
    DEFAULT_URL,
    LIMITS,
    OUTCOME,
    STREAM,
    Call,
    OnBusy,
    OnPendingPause,
    PauseFilter,
    TakeOver,
    auth_headers,
    service_url,
)
from symfonic.client.errors import ApiError, error_of, reaching
from symfonic.client.events import (
    ACCEPTED,
    FeedEvent,
    approval_recorded,
    event_of,
    feed_event_of,
    result_of,
)
from symfonic.client.feed import FEED_PATH, FEED_TIMEOUT, Reconnect, feed_params
from symfonic.client.models import (
    Delivery,
    Destination,
    Health,
    Pause,
    PausePage,
    Run,
    RunStarted,
    Session,
    SessionCreated,
)
from symfonic.client.sse import Frame, FrameReader
from symfonic.core.contracts.types import (
    TERMINAL_EVENTS,
    Answer,
    AnswerStatus,
    ApprovalRecordedEvent,
    Event,
    TurnResult,
)

T = TypeVar("T")
E = TypeVar("E")


class AsyncSymfonicClient:
    """The HTTP API from asyncio (or trio), on ``httpx.AsyncClient``.

    Use it as an ``async with`` block, which closes its connections.

    Args:
        base_url: the service's address; one without a scheme (``127.0.0.1:8000``) is
            taken as ``http://``.
        api_key: sent in the ``Authorization`` header only, never in a URL.
        timeout: httpx's timeout for each request.
        transport: an httpx transport to send through instead of the network
            (``httpx.ASGITransport(app)`` runs against an app in process).

    Raises:
        ApiError: the service refused a request; also the Python API's own type for its
            code (``PauseExpired``, ...).
        ServiceUnreachable: nothing answers at ``base_url``; the message names it.
        httpx.TransportError: a connection that broke after it was made.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = auth_headers(api_key)
        base_url = service_url(base_url)
        self.base_url, self.has_key = base_url, bool(headers)
        self._http = httpx.AsyncClient(
            base_url=base_url,
            headers=headers,
            timeout=timeout,
            limits=LIMITS,
            transport=transport,
        )

    def __repr__(self) -> str:
        return f"AsyncSymfonicClient({self.base_url!r})"

    async def __aenter__(self) -> AsyncSymfonicClient:
        await self._http.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._http.__aexit__(*exc)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, call: Call[T], headers: dict[str, str] | None = None) -> T:
        with reaching(self.base_url):
            response = await self._http.request(
                call.method, call.path, params=call.params, json=call.body, headers=headers
            )
        if response.status_code >= 400:
            raise error_of(response)
        return call.read(response.json())

    # sessions and turns ---------------------------------------------------

    async def create_session(
        self, agent: str | None = None, metadata: dict[str, Any] | None = None
    ) -> SessionCreated:
        """A new session, bound to ``agent`` (default: the service's first)."""
        return await self._send(calls.create_session(agent, metadata))

    async def get_session(self, session_id: str) -> Session:
        return await self._send(calls.get_session(session_id))

    async def stream(
        self,
        message: str,
        session_id: str,
        *,
        base_revision: int | None = None,
        on_pending_pause: OnPendingPause = "reject",
        on_busy: TakeOver = "reject",
    ) -> AsyncGenerator[Event, None]:
        """A turn's events as they happen, ending with exactly one of
        ``TurnPausedEvent``, ``ResponseCompleteEvent`` or ``ErrorEvent``."""
        body = calls.turn_body(message, base_revision, on_pending_pause, on_busy)
        path = f"{calls.session_path(session_id)}/turns"
        async with aclosing(self._events(path, body)) as events:
            async for event in events:
                yield event

    async def run(
        self,
        message: str,
        session_id: str | None = None,
        *,
        base_revision: int | None = None,
        on_pending_pause: OnPendingPause = "reject",
        on_busy: TakeOver = "reject",
    ) -> TurnResult:
        """A turn's outcome; without ``session_id``, in a new session."""
        if session_id is None:
            session_id = (await self.create_session()).session_id
        body = calls.turn_body(message, base_revision, on_pending_pause, on_busy)
        path = f"{calls.session_path(session_id)}/turns"
        return await self._send(Call("POST", path, result_of, body=body), OUTCOME)

    async def resume_stream(
        self,
        token: str,
        answer: Answer = None,
        *,
        status: AnswerStatus = "resolved",
        args_digest: str | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Answer a pause and stream the resumed turn. Leaving the stream early
        abandons the pause, as a client that hangs up does."""
        body = calls.resume_body(token, answer, status, args_digest)
        async with aclosing(self._events("/v1/resume", body)) as events:
            async for event in events:
                yield event

    async def resume(
        self,
        token: str,
        answer: Answer = None,
        *,
        status: AnswerStatus = "resolved",
        args_digest: str | None = None,
    ) -> TurnResult:
        """Answer a pause (``status="cancelled"``: decline it); the resumed turn's outcome."""
        body = calls.resume_body(token, answer, status, args_digest)
        return await self._send(Call("POST", "/v1/resume", result_of, body=body), OUTCOME)

    async def _events(self, path: str, body: dict[str, Any]) -> AsyncGenerator[Event, None]:
        with reaching(self.base_url):
            async with self._http.stream("POST", path, json=body, headers=STREAM) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise error_of(response)
                if response.status_code == ACCEPTED:
                    # An approval counted toward a quorum: no turn ran, the body is its outcome.
                    await response.aread()
                    yield approval_recorded(response.json())
                    return
                reader = FrameReader()
                async for line in response.aiter_lines():
                    frame = reader.feed(line)
                    event = None if frame is None else event_of(frame)
                    if event is not None:
                        yield event

    # background runs ------------------------------------------------------

    async def start(
        self,
        message: str,
        session_id: str | None = None,
        *,
        base_revision: int | None = None,
        on_pending_pause: OnPendingPause = "reject",
        on_busy: OnBusy = "reject",
    ) -> RunStarted:
        """A turn run in the background (``"background": true``): every refusal is raised
        before it starts; then it runs on the service whether or not anyone follows it.
        ``on_busy``: what it does while another turn holds the session (docs/runs.md);
        ``enqueue`` answers with a run that reads ``queued`` until its turn comes."""
        if session_id is None:
            session_id = (await self.create_session()).session_id
        body = calls.turn_body(message, base_revision, on_pending_pause, on_busy)
        return await self._send(calls.start_turn(session_id, body))

    async def start_resume(
        self,
        token: str,
        answer: Answer = None,
        *,
        status: AnswerStatus = "resolved",
        args_digest: str | None = None,
    ) -> RunStarted | ApprovalRecordedEvent:
        """Answer a pause and run the resumed turn in the background; the pause is claimed
        before this returns. An approval only counted toward several starts no run."""
        body = calls.resume_body(token, answer, status, args_digest)
        return await self._send(calls.start_resume(body))

    async def get_run(self, run_id: str) -> Run:
        return await self._send(calls.get_run(run_id))

    async def cancel_run(self, run_id: str) -> Run:
        """Cancel a running run: it publishes nothing; 409 ``run_not_running`` once it settled."""
        return await self._send(calls.cancel_run(run_id))

    async def run_events(
        self,
        run_id: str,
        *,
        last_event_id: str | None = None,
        attempts: int = 5,
        on_reconnect: Callable[[Exception], None] | None = None,
    ) -> AsyncGenerator[Event, None]:
        """A run's events, the turn stream's own, from the first (or after
        ``last_event_id``) to its terminal one, reconnecting with ``Last-Event-ID``
        as the pause feed does, so each arrives once. Leaving early stops following,
        never the run. ``on_reconnect`` hears of each lost connection that will be
        reopened, with what broke it."""
        state = Reconnect(last_event_id, attempts)
        path = f"{calls.run_path(run_id)}/events"
        while True:
            try:
                async with aclosing(self._follow(path, {}, state, event_of)) as events:
                    async for event in events:
                        yield event
                        if isinstance(event, TERMINAL_EVENTS):
                            return
                raise httpx.RemoteProtocolError("the service ended the run's events early")
            except (ApiError, httpx.TransportError) as error:
                delay = state.failed(error)
                if on_reconnect is not None:
                    on_reconnect(error)
                await anyio.sleep(delay)

    # pauses ---------------------------------------------------------------

    async def list_pauses(
        self,
        which: PauseFilter | None = None,
        *,
        limit: int = 50,
        cursor: str | None = None,
    ) -> PausePage:
        """One page of the pauses the caller may answer, oldest first."""
        return await self._send(calls.pause_page(which or PauseFilter(), limit, cursor))

    async def iter_pauses(
        self, which: PauseFilter | None = None, *, page_size: int = calls.MAX_PAGE
    ) -> AsyncGenerator[Pause, None]:
        """Every pause the listing has, page after page, following each ``next_cursor``."""
        cursor: str | None = None
        while True:
            page = await self.list_pauses(which, limit=page_size, cursor=cursor)
            for pause in page.pauses:
                yield pause
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def pause_feed(
        self,
        *,
        details: bool = False,
        last_event_id: str | None = None,
        attempts: int = 5,
    ) -> AsyncGenerator[FeedEvent, None]:
        """The live feed: a snapshot, then each change, reconnecting with
        ``Last-Event-ID`` when the connection drops (`symfonic.client.feed`)."""
        state = Reconnect(last_event_id, attempts)
        while True:
            try:
                async with aclosing(self._feed_once(state, details)) as events:
                    async for event in events:
                        yield event
                raise httpx.RemoteProtocolError("the service ended the feed")
            except (ApiError, httpx.TransportError) as error:
                await anyio.sleep(state.failed(error))

    def _feed_once(self, state: Reconnect, details: bool) -> AsyncGenerator[FeedEvent, None]:
        return self._follow(FEED_PATH, feed_params(details), state, feed_event_of)

    async def _follow(
        self,
        path: str,
        params: dict[str, Any],
        state: Reconnect,
        parse: Callable[[Frame], E | None],
    ) -> AsyncGenerator[E, None]:
        """One connection to a stream that resumes from ``Last-Event-ID``: its parsed frames."""
        headers = state.headers()
        with reaching(self.base_url):
            async with self._http.stream(
                "GET", path, params=params, headers=headers, timeout=FEED_TIMEOUT
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise error_of(response)
                state.connected()
                reader = FrameReader()
                async for line in response.aiter_lines():
                    frame = reader.feed(line)
                    state.read(reader)
                    event = None if frame is None else parse(frame)
                    if event is not None:
                        yield event

    # webhooks and health --------------------------------------------------

    async def webhook_deliveries(
        self,
        states: list[str] | None = None,
        *,
        type: str | None = None,
        url: str | None = None,
        limit: int = 50,
    ) -> list[Delivery]:
        """The webhook outbox, newest first (default: failed and pending); an operator's."""
        return (await self._send(calls.deliveries(states, type, url, limit))).deliveries

    async def webhook_destinations(self) -> list[Destination]:
        return (await self._send(calls.destinations())).destinations

    async def reassign_pause(
        self, pause_id: str, audience: str, reason: str, *, keep_previous: bool = False
    ) -> Pause:
        """Hand a pending pause to ``audience`` (the operator scope's); the pause after."""
        return await self._send(calls.reassign(pause_id, audience, reason, keep_previous))

    async def resend_delivery(self, delivery_id: int) -> Delivery:
        return await self._send(calls.resend(delivery_id))

    async def health(self) -> Health:
        return await self._send(calls.health())
