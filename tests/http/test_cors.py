"""A browser app on another origin may use the API, ``/v1/agui`` and the feed, only from
the origins the operator named, with a key and never with the inbox's cookie; with no
origins named the service answers no preflight and stays same-origin."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from serve_support import ALICE, serving
from symfonic.cli.main import main
from symfonic.demo import demo_agent
from symfonic.server.app import create_app

pytestmark = pytest.mark.anyio

APP = "https://app.example"
KEYS = "alice=alice-key"
BEARER = {"Authorization": "Bearer alice-key"}


@asynccontextmanager
async def client(store: str, origins: Sequence[str]) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        demo_agent(), store=store, api_keys=KEYS, cors_origins=origins, sweep_interval=0
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://api.example") as http:
        yield http


def preflight(origin: str, method: str, headers: str) -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": headers,
    }


async def test_a_listed_origin_may_call_the_agui_endpoint_with_a_key(sqlite_url: str) -> None:
    async with client(sqlite_url, [APP, "http://localhost:5173"]) as http:
        asked = await http.options(
            "/v1/agui", headers=preflight(APP, "POST", "authorization,content-type")
        )
        assert asked.status_code == 200, asked.text
        assert asked.headers["access-control-allow-origin"] == APP
        assert "POST" in asked.headers["access-control-allow-methods"]
        allowed = asked.headers["access-control-allow-headers"].lower()
        assert "authorization" in allowed and "content-type" in allowed
        assert "access-control-allow-credentials" not in asked.headers

        body = {
            "threadId": "t-cors",
            "runId": "r1",
            "messages": [{"id": "m1", "role": "user", "content": "hello"}],
            "tools": [],
            "context": [],
            "state": None,
            "forwardedProps": {},
        }
        ran = await http.post("/v1/agui", json=body, headers={"Origin": APP, **BEARER})
        assert ran.status_code == 200
        assert ran.headers["access-control-allow-origin"] == APP
        assert "access-control-allow-credentials" not in ran.headers
        assert "RUN_FINISHED" in ran.text


async def test_a_listed_origin_may_read_the_api_and_resume_the_feed(sqlite_url: str) -> None:
    async with client(sqlite_url, [APP]) as http:
        feed = await http.options(
            "/v1/pauses/events", headers=preflight(APP, "GET", "authorization,last-event-id")
        )
        assert feed.status_code == 200
        assert "last-event-id" in feed.headers["access-control-allow-headers"].lower()
        listed = await http.get("/v1/pauses", headers={"Origin": APP, **BEARER})
        assert listed.status_code == 200
        assert listed.headers["access-control-allow-origin"] == APP
        # A refusal is readable too, with what a client needs to retry.
        refused = await http.get("/v1/pauses", headers={"Origin": APP})
        assert refused.status_code == 401
        assert refused.headers["access-control-allow-origin"] == APP


async def test_an_unlisted_origin_is_refused(sqlite_url: str) -> None:
    async with client(sqlite_url, [APP]) as http:
        asked = await http.options(
            "/v1/agui", headers=preflight("https://evil.example", "POST", "authorization")
        )
        assert asked.status_code == 400
        assert "access-control-allow-origin" not in asked.headers
        listed = await http.get("/v1/pauses", headers={"Origin": "https://evil.example", **BEARER})
        assert "access-control-allow-origin" not in listed.headers


async def test_with_no_origins_nothing_changes(sqlite_url: str) -> None:
    async with client(sqlite_url, []) as http:
        asked = await http.options(
            "/v1/agui", headers=preflight(APP, "POST", "authorization,content-type")
        )
        assert asked.status_code == 405
        assert "access-control-allow-origin" not in asked.headers
        listed = await http.get("/v1/pauses", headers={"Origin": APP, **BEARER})
        assert listed.status_code == 200
        assert not [h for h in listed.headers if h.startswith("access-control-")]


def test_serve_takes_repeated_cors_origins(sqlite_url: str, tmp_path: Path) -> None:
    with serving(
        sqlite_url, tmp_path / "log", "--cors-origin", APP, "--cors-origin", "http://localhost:5173"
    ) as server:
        for origin in (APP, "http://localhost:5173"):
            asked = httpx.options(
                f"{server.url}/v1/sessions", headers=preflight(origin, "POST", "authorization")
            )
            assert (asked.status_code, asked.headers["access-control-allow-origin"]) == (
                200,
                origin,
            )
        sessions = httpx.post(
            f"{server.url}/v1/sessions", json={}, headers={"Origin": APP, **ALICE}
        )
        assert sessions.status_code == 201, sessions.text
        assert sessions.headers["access-control-allow-origin"] == APP


def test_serve_refuses_an_origin_that_is_not_one_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "serve",
                "--store",
                f"sqlite:///{tmp_path}/s.db",
                "--cors-origin",
                "https://app.example/path",
            ]
        )
        == 2
    )
    [line] = capsys.readouterr().err.splitlines()
    assert line == (
        "symfonic serve: a CORS origin is a scheme and a host, with a port if not the default, "
        "such as https://app.example or http://localhost:5173; 'https://app.example/path' is "
        "not one"
    )
