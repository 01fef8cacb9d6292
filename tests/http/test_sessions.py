"""Sessions, principals and the service's edges: auth, ownership, listing, health, errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime

import pytest

from http_support import (
    APPROVE,
    JSON,
    KEYS,
    approved,
    auth,
    client_of,
    pause_row,
    paused_turn,
    payment_agent,
    serve,
    served_pause,
)
from symfonic import SymfonicAgent
from symfonic.core.contracts.types import PauseState
from symfonic.server.app import create_app
from symfonic.testing import reply

pytestmark = pytest.mark.anyio
# An empty listing: no page, nothing in all, no next page.
NO_PAUSES = {"pauses": [], "total": 0, "next_cursor": None}


async def test_create_session_is_201_and_idle(sqlite_url: str) -> None:
    async with serve(payment_agent(sqlite_url)) as client:
        response = await client.post("/v1/sessions", json={"metadata": {"ticket": 7}})
        assert response.status_code == 201
        body = response.json()
        assert body == {"session_id": body["session_id"], "agent": "assistant", "revision": 0,
                        "status": "idle"}
        view = (await client.get(f"/v1/sessions/{body['session_id']}")).json()
        assert view == {"session_id": body["session_id"], "agent": "assistant", "revision": 0,
                        "status": "idle", "metadata": {"ticket": 7}, "pending_pause": None,
                        "parent_session_id": None, "messages": []}
        assert (await client.post("/v1/sessions")).status_code == 201


async def test_strings_any_json_allows_are_stored_and_sent_back(sqlite_url: str) -> None:
    async with serve(payment_agent(sqlite_url)) as client:
        body = b'{"metadata": {"k\\udbb5": "nul\\u0000 pair\\ud83d\\ude00"}}'
        created = await client.post(
            "/v1/sessions", content=body, headers={"Content-Type": "application/json"}
        )
        assert created.status_code == 201
        view = await client.get(f"/v1/sessions/{created.json()['session_id']}")
        assert view.json()["metadata"] == {"k\ufffd": "nul\x00 pair\U0001f600"}


async def test_sessions_are_bound_to_the_named_agent(sqlite_url: str) -> None:
    other = SymfonicAgent(name="greeter", model=_model("Hi from greeter."), store=sqlite_url)  # type: ignore[arg-type]
    async with serve(payment_agent(sqlite_url), other) as client:
        created = await client.post("/v1/sessions", json={"agent": "greeter"})
        assert created.json()["agent"] == "greeter"
        session_id = created.json()["session_id"]
        outcome = await client.post(
            f"/v1/sessions/{session_id}/turns", json={"message": "hi"}, headers=JSON
        )
        assert outcome.json()["answer"] == "Hi from greeter."
        unknown = await client.post("/v1/sessions", json={"agent": "nobody"})
        assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "unknown_agent")


def _model(text: str) -> object:
    from symfonic.testing import ScriptedChatModel

    return ScriptedChatModel.from_script([reply(text)])


async def test_missing_or_unknown_key_is_401_with_bearer_challenge(sqlite_url: str) -> None:
    async with serve(payment_agent(sqlite_url), api_keys=KEYS) as client:
        for headers in [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic a2V5"},
                        {"Authorization": "key-alice"}]:
            response = await client.post("/v1/sessions", json={}, headers=headers)
            assert response.status_code == 401
            assert response.headers["www-authenticate"] == "Bearer"
            assert response.json()["error"]["code"] == "unauthenticated"
            assert "key-alice" not in response.text
        listed = await client.get("/v1/pauses")
        assert listed.status_code == 401
        assert (await client.get("/v1/health")).status_code == 200


async def test_other_principals_get_404_for_a_session(store_url: str) -> None:
    agent = payment_agent(store_url)
    async with serve(agent, api_keys=KEYS) as client:
        session_id, paused = await paused_turn(client, auth("alice"))
        for method, path, body in [
            ("GET", f"/v1/sessions/{session_id}", None),
            ("POST", f"/v1/sessions/{session_id}/turns",
             {"message": "hi", "on_pending_pause": "abandon"}),
        ]:
            response = await client.request(method, path, json=body, headers=auth("bob"))
            assert response.status_code == 404
            assert response.json()["error"]["code"] == "session_not_found"
            unknown = await client.request(
                method, path.replace(session_id, "0" * 32), json=body, headers=auth("alice")
            )
            assert unknown.status_code == 404
            assert unknown.json()["error"]["code"] == "session_not_found"
        refused = await client.post(
            "/v1/resume", json={"token": paused["pause_token"], "answer": APPROVE},
            headers=auth("bob"),
        )
        assert refused.status_code == 403
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.PENDING
        assert (await client.get("/v1/pauses", headers=auth("bob"))).json() == NO_PAUSES


async def test_pauses_listing_filters_by_state(sqlite_url: str) -> None:
    async with served_pause(sqlite_url) as (_, client, _, paused):
        pending = (await client.get("/v1/pauses", params={"state": "pending"})).json()["pauses"]
        assert [p["pause_id"] for p in pending] == [paused["pause_id"]]
        listed = pending[0]
        assert listed["token"] == paused["pause_token"]
        for key in ["kind", "query", "response_schema", "tool_call_id", "interrupt_id"]:
            assert listed[key] == paused[key]
        assert datetime.fromisoformat(listed["expires_at"]) == datetime.fromisoformat(
            paused["expires_at"]
        )
        await approved(client, paused["pause_token"])
        assert (await client.get("/v1/pauses")).json() == NO_PAUSES
        published = (await client.get("/v1/pauses?state=published")).json()["pauses"]
        assert [(p["pause_id"], p["answered_by"], p["token"]) for p in published] == [
            (paused["pause_id"], "local", None)
        ]
        for query in ["state=whatever", "state=pending&surprise=1"]:
            bad = await client.get(f"/v1/pauses?{query}")
            assert (bad.status_code, bad.json()["error"]["code"]) == (422, "invalid_request")


async def test_health_is_503_when_the_store_does_not_answer() -> None:
    agent = SymfonicAgent(model=_model("x"))  # type: ignore[arg-type]
    app = create_app(agent, store="postgresql://nobody@127.0.0.1:9/none", api_keys="")
    async with client_of(app) as client:
        response = await client.get("/v1/health")
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "store_unavailable"
        assert "nobody" not in response.text


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/v1/sessions", b"{not json", 400),
        ("POST", "/v1/sessions", b'{"metadata": 3}', 422),
        ("POST", "/v1/sessions", b'{"surprise": true}', 422),
        ("POST", "/v1/resume", b'{"token": "t", "answer": NaN}', 422),
        ("POST", "/v1/resume", b'{"token": "t", "answer": {"\\udbb5": "\\u0000"}}', 404),
        ("POST", "/v1/resume", b'{"answer": 1}', 422),
        ("POST", "/v1/resume", b"[" * 5000 + b"]" * 5000, 400),
        ("POST", "/v1/sessions", b'{"metadata": {"k": "' + b"x" * (4 << 20) + b'"}}', 413),
        ("GET", "/v1/sessions/bad%00id", None, 422),
        ("GET", "/v1/nowhere", None, 404),
        ("DELETE", "/v1/sessions", None, 405),
    ],
)
async def test_malformed_requests_get_the_error_shape(
    sqlite_url: str, method: str, path: str, body: bytes | None, status: int
) -> None:
    async with serve(payment_agent(sqlite_url)) as client:
        response = await client.request(
            method, path, content=body, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == status, response.text
        error = response.json()["error"]
        assert set(error) == {"code", "message"}


SENT_AS_JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("path", "body", "said"),
    [
        ("/v1/sessions", b'{"agent": ', "ends before the JSON value does (a value was expected)"),
        ("/v1/sessions", b'{\n  "metadata": {"a": 1}\n  "agent": "x"}',
         "at line 3, column 3, a ',' was expected"),
        ("/v1/sessions", b"{not json", "at line 1, column 2, a name in double quotes was expected"),
        ("/v1/resume", b'{"token": "t"} {}', "at line 1, column 16, more follows the end"),
        ("/v1/sessions/s/turns", b"{'message': 'hi'}", "at line 1, column 2, a name in double"),
    ],
)
async def test_malformed_json_is_400_bad_request_saying_where_it_broke(
    sqlite_url: str, path: str, body: bytes, said: str
) -> None:
    async with serve(payment_agent(sqlite_url)) as client:
        response = await client.post(path, content=body, headers=SENT_AS_JSON)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "bad_request"
    assert error["message"].startswith("the body is not valid JSON: ") and said in error["message"]


@pytest.mark.parametrize("content_type", [None, "application/x-www-form-urlencoded", "text/plain"])
async def test_a_json_body_without_its_content_type_is_refused_saying_which_header_to_send(
    sqlite_url: str, content_type: str | None
) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    async with serve(payment_agent(sqlite_url)) as client:
        response = await client.post("/v1/sessions", content=b"{}", headers=headers)
        fine = await client.post(
            "/v1/sessions", content=b"{}", headers={"Content-Type": "application/json"}
        )
    assert response.status_code == 415, response.text
    error = response.json()["error"]
    assert error["code"] == "unsupported_media_type"
    assert "the body must be JSON, sent with Content-Type: application/json" in error["message"]
    assert (content_type or "sent none") in error["message"]
    assert fine.status_code == 201, fine.text


async def test_an_unreadable_body_is_400_in_words(sqlite_url: str) -> None:
    async with serve(payment_agent(sqlite_url)) as client:
        response = await client.post(
            "/v1/sessions", content=b"\xff", headers={"Content-Type": "application/json"}
        )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "bad_request",
        "message": "the body could not be read as JSON: "
        "it is not UTF-8 text, or it nests too deeply",
    }


async def test_a_chunked_body_over_the_cap_is_413(sqlite_url: str) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"metadata": {"k": "'
        for _ in range(4):
            yield b"x" * 50_000
        yield b'"}}'

    async with serve(payment_agent(sqlite_url), max_body_size=100_000) as client:
        response = await client.post(
            "/v1/sessions", content=chunks(), headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "content_too_large"


async def test_openapi_documents_every_body_and_error(sqlite_url: str) -> None:
    async with serve(payment_agent(sqlite_url)) as client:
        document = (await client.get("/openapi.json")).json()
    paths = document["paths"]
    turn = paths["/v1/sessions/{session_id}/turns"]["post"]
    assert set(turn["responses"]["200"]["content"]) == {"application/json", "text/event-stream"}
    assert turn["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/TurnOutcome"
    }
    resume = paths["/v1/resume"]["post"]
    assert {"400", "401", "403", "404", "409", "410", "415", "422", "429"} <= set(
        resume["responses"]
    )
    assert {"400", "415"} <= set(turn["responses"])
    # A 202 is no error: a background run's start, or an approval counted toward a quorum.
    assert "202" in resume["responses"]
    for operation in (turn, resume):
        for status, response in operation["responses"].items():
            if not status.startswith("2"):
                assert response["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/ErrorResponse"
                }
    assert "Retry-After" in resume["responses"]["429"]["headers"]
    schemas = document["components"]["schemas"]
    for name in ["TurnPausedEvent", "ResponseCompleteEvent", "ErrorEvent", "ResumeRequest",
                 "SessionView", "PauseList"]:
        assert name in schemas
