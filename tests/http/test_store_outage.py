"""The store out of reach, as an HTTP or AG-UI client meets it.

Refused before anything was claimed: 503 ``store_unavailable`` with
``Retry-After``, on the native API and on ``POST /v1/agui`` alike. Failed after
the claim: the stream's error says so in plain words. Either way, what the
database driver said (its class names, its messages) stays in the server log.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from ag_ui.core import RunErrorEvent, RunFinishedInterruptOutcome

from agui_support import AguiClient, agui_app, finished, parse_stream, run_body
from http_support import APPROVE, frames, paused_turn, payment_agent, serve
from outage_support import Outage
from symfonic import SymfonicAgent
from symfonic.server.service.host import ServiceHost

pytestmark = pytest.mark.anyio

WORDS_OF_THE_DRIVER = ("CannotConnectNowError", "shutting down", "Error:")


def away(monkeypatch: pytest.MonkeyPatch, store: Any, method: str) -> Outage:
    wrapper = Outage(getattr(store, method), math.inf)
    monkeypatch.setattr(store, method, wrapper)
    return wrapper


def assert_no_driver_words(text: str) -> None:
    for words in WORDS_OF_THE_DRIVER:
        assert words not in text, text


def assert_503(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.json() == {
        "error": {
            "code": "store_unavailable",
            "message": "the store is unavailable and nothing was recorded; try again shortly",
        }
    }
    assert int(response.headers["Retry-After"]) > 0
    assert_no_driver_words(response.text)


@pytest.fixture
async def agent(sqlite_url: str) -> SymfonicAgent:
    return payment_agent(sqlite_url, claim_lease=0.5)


@pytest.fixture
async def client(agent: SymfonicAgent) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(agent) as served:
        yield served


async def test_a_resume_refused_before_the_claim_is_503_with_retry_after(
    agent: SymfonicAgent, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, paused = await paused_turn(client)
    lookup = away(monkeypatch, agent.store, "get_pause")
    body = {"token": paused["pause_token"], "answer": APPROVE}
    for accept in ("text/event-stream", "application/json"):
        assert_503(await client.post("/v1/resume", json=body, headers={"Accept": accept}))
    assert lookup.calls
    monkeypatch.undo()  # the store is back: the token was never spent
    done = await client.post("/v1/resume", json=body)
    assert frames(done.text)[-1].event == "response.complete"


async def test_a_turn_or_a_new_session_refused_by_the_store_is_503(
    agent: SymfonicAgent, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id, _ = await paused_turn(client)
    away(monkeypatch, agent.store, "create_session")
    assert_503(await client.post("/v1/sessions", json={}))
    away(monkeypatch, agent.store, "get_session")
    assert_503(await client.post(f"/v1/sessions/{session_id}/turns", json={"message": "hi"}))
    assert_503(await client.get(f"/v1/sessions/{session_id}"))


async def test_a_resume_the_store_could_not_record_says_so_without_the_drivers_words(
    agent: SymfonicAgent, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, paused = await paused_turn(client)
    away(monkeypatch, agent.store, "publish_resume")
    body = {"token": paused["pause_token"], "answer": APPROVE}
    streamed = await client.post("/v1/resume", json=body)
    last = frames(streamed.text)[-1]
    assert last.event == "error" and last.data["code"] == "internal"
    assert "store could not be reached" in last.data["message"]
    assert_no_driver_words(streamed.text)


async def test_the_openapi_declares_503_with_retry_after(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    for path, method in [
        ("/v1/resume", "post"),
        ("/v1/sessions", "post"),
        ("/v1/sessions/{session_id}/turns", "post"),
        ("/v1/agui", "post"),
        ("/v1/health", "get"),
    ]:
        declared = document["paths"][path][method]["responses"]["503"]
        assert "Retry-After" in declared["headers"], path
        assert "store_unavailable" in declared["description"], path


@pytest.fixture
async def host(sqlite_url: str) -> AsyncIterator[ServiceHost]:
    served = ServiceHost([payment_agent(sqlite_url, claim_lease=0.5)], store=sqlite_url)
    await served.open()
    yield served
    await served.aclose()


async def test_an_agui_run_refused_by_the_store_before_it_starts_is_503(
    host: ServiceHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    away(monkeypatch, host.store, "get_session")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=agui_app(host)), base_url="http://agui.test"
    ) as http:
        response = await http.post(
            "/v1/agui",
            json=run_body(f"t-{uuid.uuid4().hex}", "pay 5"),
            headers={"Authorization": "Bearer alice-key"},
        )
    assert_503(response)


async def test_an_agui_resume_the_store_could_not_record_ends_in_run_error_in_plain_words(
    host: ServiceHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = AguiClient(agui_app(host))
    thread = f"t-{uuid.uuid4().hex}"
    outcome = finished(await client.run(run_body(thread, "pay 5"))).outcome
    assert isinstance(outcome, RunFinishedInterruptOutcome)
    away(monkeypatch, host.store, "publish_resume")
    entry = {"interruptId": outcome.interrupts[0].id, "status": "resolved",
             "payload": {"approved": True}}
    response = await client.http.post(
        "/v1/agui", json=run_body(thread, resume=[entry]),
        headers={"Authorization": "Bearer alice-key"},
    )
    await client.aclose()
    events = parse_stream(response.text)
    assert isinstance(events[-1], RunErrorEvent)
    assert "store could not be reached" in events[-1].message
    assert_no_driver_words(response.text)
