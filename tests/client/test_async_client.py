"""``AsyncSymfonicClient`` against the real app under uvicorn, on SQLite and PostgreSQL.

What a program using the client relies on: a turn arrives as the Python API's
typed events and a resume as its ``TurnResult``; refusals are the Python API's
exception types, each also an ``ApiError`` with the service's code; the
listing is read to its end through its cursors; the live feed comes back by
itself after its connection drops, with nothing missed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing, asynccontextmanager
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from bulk_pauses import bulk_pauses
from http_support import paused_turn, payment_agent, uvicorn_serving
from symfonic import (
    InvalidAnswer,
    PauseAlreadyAnswered,
    PauseAlreadyClaimed,
    PauseNotFound,
    SessionNotFound,
    SessionPaused,
    SymfonicAgent,
)
from symfonic.client import (
    ApiError,
    AsyncSymfonicClient,
    PauseChange,
    PauseFilter,
    PauseSnapshot,
)
from symfonic.core.contracts.types import (
    InteractionKind,
    PauseState,
    ResponseCompleteEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnPausedEvent,
    TurnStartedEvent,
)
from symfonic.server.app import create_app

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
KEYS = "alice=key-alice,bob=key-bob"
ALICE = {"Authorization": "Bearer key-alice"}
APPROVE = {"decision": "approve"}


@asynccontextmanager
async def served(
    agent: SymfonicAgent, transport: httpx.AsyncBaseTransport | None = None
) -> AsyncIterator[tuple[AsyncSymfonicClient, httpx.AsyncClient]]:
    """The client as alice against ``agent`` under uvicorn, and a plain httpx client."""
    app = create_app(agent, api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as http:
        url = str(http.base_url)
        async with AsyncSymfonicClient(url, api_key="key-alice", transport=transport) as client:
            yield client, http


async def test_a_turn_streams_typed_events_and_a_resume_is_answered_once(store_url: str) -> None:
    agent = payment_agent(store_url)
    async with served(agent) as (client, _):
        session = await client.create_session()
        events = [event async for event in client.stream("pay 5", session.session_id)]
        assert [type(event) for event in events] == [
            TurnStartedEvent,
            ToolCallEvent,
            TurnPausedEvent,
        ]
        paused = events[-1]
        assert isinstance(paused, TurnPausedEvent)
        assert paused.kind is InteractionKind.APPROVAL and paused.args_digest
        assert paused.expires_at > datetime.now(UTC)

        resumed = [
            event
            async for event in client.resume_stream(
                paused.pause_token, APPROVE, args_digest=paused.args_digest
            )
        ]
        assert isinstance(resumed[-1], ResponseCompleteEvent) and resumed[-1].answer == "Paid."
        assert any(isinstance(e, ToolResultEvent) and e.content == "paid 5" for e in resumed)
        # The identical answer again replays the outcome; a different one is refused.
        replay = await client.resume(paused.pause_token, APPROVE)
        assert (replay.status, replay.answer) == ("complete", "Paid.")
        with pytest.raises(PauseAlreadyAnswered) as refused:
            await client.resume(paused.pause_token, {"decision": "reject"})
        assert isinstance(refused.value, ApiError)
        assert isinstance(refused.value, PauseAlreadyClaimed)
        assert (refused.value.status, refused.value.code) == (409, "already_answered")
        published = await agent.pauses("alice", PauseState.PUBLISHED)
        assert [p.answer for p in published] == [APPROVE]
        view = await client.get_session(session.session_id)
        assert view.status == "idle" and view.revision == 1 and view.pending_pause is None
        assert [m.role for m in view.messages][-1] == "ai"


async def test_run_returns_the_python_apis_result_and_refusals_its_exceptions(
    sqlite_url: str,
) -> None:
    async with served(payment_agent(sqlite_url)) as (client, _):
        result = await client.run("pay 5")
        assert result.status == "paused" and result.pause is not None
        assert result.pause.kind is InteractionKind.APPROVAL and result.pause.token
        assert "token='***'" in repr(result.pause)

        with pytest.raises(SessionPaused) as busy:
            await client.run("pay 6", result.session_id)
        assert busy.value.status == 409
        with pytest.raises(InvalidAnswer) as invalid:
            await client.resume(result.pause.token, {"decision": "maybe"})
        assert invalid.value.status == 422 and invalid.value.message
        with pytest.raises(PauseNotFound):
            await client.resume("sfp_not-a-token", APPROVE)
        with pytest.raises(SessionNotFound):
            await client.get_session("no-such-session")
        # The token was not spent by the refusals: it still answers.
        declined = await client.resume(result.pause.token, status="cancelled")
        assert declined.status == "complete"


async def test_a_refusal_is_an_api_error_with_the_services_status_code_and_words(
    sqlite_url: str,
) -> None:
    async with served(payment_agent(sqlite_url)) as (client, http):
        async with AsyncSymfonicClient(str(http.base_url), api_key="wrong-key") as stranger:
            with pytest.raises(ApiError) as refused:
                await stranger.list_pauses()
        assert (refused.value.status, refused.value.code) == (401, "unauthenticated")
        with pytest.raises(ApiError) as unknown:
            await client.create_session(agent="nobody")
        assert unknown.value.code == "unknown_agent" and "nobody" in unknown.value.message


async def test_every_pause_is_read_through_the_listings_pages(store_url: str) -> None:
    agent = payment_agent(store_url)
    async with served(agent) as (client, _):
        await client.health()  # served: the app's lifespan has opened the store
        start = datetime.now(UTC) - timedelta(hours=1)
        questions = [f"Which colour for room {i}?" for i in range(120)]
        await bulk_pauses(agent.store, questions, start=start, principal="alice", agent=agent.name)

        first = await client.list_pauses(limit=50)
        assert len(first.pauses) == 50 and first.total == 120 and first.next_cursor
        every = [pause async for pause in client.iter_pauses(page_size=50)]
        assert [p.query for p in every] == questions
        assert all(p.token and p.state is PauseState.PENDING for p in every)
        found = [p.query async for p in client.iter_pauses(PauseFilter(q="ROOM 11"))]
        assert found == [f"Which colour for room {i}?" for i in (11, *range(110, 120))]


class CutOnce(httpx.AsyncBaseTransport):
    """A real connection, but the first response of a resumable stream (the pause
    feed, a run's events) breaks after its first frame, as a proxy or a restart
    would; ``while_away`` runs before the break."""

    def __init__(self, while_away: Callable[[], Awaitable[None]]) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.while_away = while_away
        self.feed_requests: list[str | None] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if not request.url.path.endswith("/events"):
            return response
        self.feed_requests.append(request.headers.get("Last-Event-ID"))
        if len(self.feed_requests) > 1:
            return response
        assert isinstance(response.stream, httpx.AsyncByteStream)
        stream = Breaking(response.stream, self.while_away)
        return httpx.Response(response.status_code, headers=response.headers, stream=stream)

    async def aclose(self) -> None:
        await self.inner.aclose()


class Breaking(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, while_away: Callable[[], Awaitable[None]]):
        self.inner, self.while_away = inner, while_away

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            yield chunk
            if b"\n\n" in chunk:
                await self.while_away()
                raise httpx.ReadError("the connection was cut")

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_the_feed_reconnects_by_itself_and_misses_nothing(store_url: str) -> None:
    made: list[str] = []
    http_box: list[httpx.AsyncClient] = []

    async def pause_while_away() -> None:
        _, paused = await paused_turn(http_box[0], ALICE)
        made.append(paused["pause_id"])

    cut = CutOnce(pause_while_away)
    async with served(payment_agent(store_url), transport=cut) as (client, http):
        http_box.append(http)
        _, before = await paused_turn(http, ALICE)
        seen: list[PauseSnapshot | PauseChange] = []
        async with aclosing(client.pause_feed()) as feed:
            async for event in feed:
                seen.append(event)
                if isinstance(event, PauseChange) and event.pause_id in made:
                    break
    snapshot, *changes = seen
    assert isinstance(snapshot, PauseSnapshot)
    assert [p.pause_id for p in snapshot.pauses] == [before["pause_id"]]
    # The change made while the connection was down arrives after the reconnect,
    # replayed from the snapshot's position (perhaps with one the client already
    # had, never one too few), not as a second snapshot.
    assert all(isinstance(change, PauseChange) for change in changes)
    created = changes[-1]
    assert isinstance(created, PauseChange) and created.type == "pause.created"
    assert created.pause is not None and created.pause.token
    assert {c.pause_id for c in changes} <= {before["pause_id"], made[0]}
    assert cut.feed_requests == [None, snapshot.position]


async def test_webhook_deliveries_and_destinations_for_an_operator(sqlite_url: str) -> None:
    app = create_app(payment_agent(sqlite_url), api_keys="", sweep_interval=0)
    async with uvicorn_serving(app) as http, AsyncSymfonicClient(str(http.base_url)) as client:
        assert await client.webhook_deliveries(["failed", "delivered"]) == []
        assert await client.webhook_destinations() == []
        assert (await client.health()).status == "ok"
        with pytest.raises(ApiError) as missing:
            await client.resend_delivery(41)
    assert (missing.value.status, missing.value.code) == (404, "delivery_not_found")
