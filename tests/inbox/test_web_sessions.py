"""Signing in to the inbox: a cookie session that names a principal, never carries its key.

The cookie authenticates the API the page calls like a Bearer key does, but a
request it authenticates that changes state needs the session's CSRF token;
sign-out needs it too. A wrong key is refused in words, after a delay. The key
never comes back in a page, a cookie or a header, and the cookie is accepted by
any app on the same database (another worker) but not one on another database.
"""

from __future__ import annotations

import base64
import re
import time
from typing import Any

import httpx
import pytest

from http_support import APPROVE, JSON, KEYS, auth, paused_turn, payment_agent, serve
from symfonic.server.app import create_app
from symfonic.server.http.web_sessions import COOKIE_NAME

pytestmark = pytest.mark.anyio


def _csrf(page: str) -> str:
    found = re.search(r'<meta name="csrf-token" content="([^"]*)">', page)
    assert found is not None, page
    return found.group(1)


async def _sign_in(
    client: httpx.AsyncClient, key: str = "key-alice", **headers: str
) -> httpx.Response:
    return await client.post(
        "/inbox",
        content=f"key={key}",
        headers={"Content-Type": "application/x-www-form-urlencoded", **headers},
    )


async def test_signing_in_sets_a_strict_http_only_cookie_that_holds_no_key(
    store_url: str,
) -> None:
    async with serve(payment_agent(store_url), api_keys=KEYS) as client:
        form = await client.get("/inbox")
        assert form.status_code == 200
        assert 'name="key"' in form.text and 'type="password"' in form.text

        response = await _sign_in(client)
        assert response.status_code == 303
        cookie = response.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE_NAME}=")
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        assert "Secure" not in cookie  # plain HTTP here; TLS requests get Secure
        assert "key-alice" not in cookie and "key-alice" not in response.text

        page = await client.get("/inbox")
        assert page.status_code == 200
        assert "alice" in page.text and "key-alice" not in page.text
        assert _csrf(page.text)
        assert "default-src 'self'" in page.headers["content-security-policy"]


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Origin": "https://evil.example"}, 403),
        ({"Sec-Fetch-Site": "cross-site", "Origin": "null"}, 403),
        ({"Origin": "http://symfonic"}, 303),
    ],
    ids=["another_origin", "a_cross_site_fetch", "the_same_site"],
)
async def test_another_site_cannot_sign_a_browser_in(
    sqlite_url: str, headers: dict[str, str], status: int
) -> None:
    async with serve(payment_agent(sqlite_url), api_keys=KEYS) as client:
        response = await _sign_in(client, **headers)
        assert response.status_code == status
        assert ("set-cookie" in response.headers) is (status == 303)


async def test_the_cookie_is_secure_over_tls(sqlite_url: str) -> None:
    app = create_app(payment_agent(sqlite_url), api_keys=KEYS, sweep_interval=0)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
        transport=httpx.ASGITransport(app), base_url="https://symfonic"
    ) as client:
        response = await _sign_in(client)
        assert "Secure" in response.headers["set-cookie"]


async def test_a_wrong_key_is_refused_in_words_after_a_delay(sqlite_url: str) -> None:
    async with serve(payment_agent(sqlite_url), api_keys=KEYS) as client:
        started = time.monotonic()
        response = await _sign_in(client, "key-mallory")
        assert time.monotonic() - started >= 0.9
        assert response.status_code == 401
        assert "That key was not accepted" in response.text
        assert "set-cookie" not in response.headers
        assert "key-mallory" not in response.text


async def test_the_cookie_reads_the_api_and_answers_only_with_the_csrf_token(
    store_url: str,
) -> None:
    agent = payment_agent(store_url)
    async with serve(agent, api_keys=KEYS) as client:
        _, paused = await paused_turn(client, auth("alice"))
        await _sign_in(client)
        csrf = _csrf((await client.get("/inbox")).text)

        plain = (await client.get("/v1/pauses")).json()["pauses"]
        assert plain[0]["asked_by"] == "alice" and plain[0]["tool_args"] is None
        listed = (await client.get("/v1/pauses?details=true")).json()["pauses"]
        assert [p["pause_id"] for p in listed] == [paused["pause_id"]]
        assert listed[0]["tool_name"] == "pay" and listed[0]["tool_args"] == {"amount": 5}
        assert listed[0]["asked_by"] == "alice"
        assert listed[0]["recent_messages"][0]["content"] == "pay 5"

        body: dict[str, Any] = {"token": paused["pause_token"], "answer": APPROVE}
        refused = await client.post("/v1/resume", json=body, headers=JSON)
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "csrf_refused"
        wrong = await client.post("/v1/resume", json=body, headers={**JSON, "X-CSRF-Token": "x"})
        assert wrong.status_code == 403
        assert (await agent.store.get_pause(paused["pause_id"])).state.value == "pending"

        done = await client.post("/v1/resume", json=body, headers={**JSON, "X-CSRF-Token": csrf})
        assert done.status_code == 200, done.text
        assert done.json()["status"] == "complete"
        pause = await agent.store.get_pause(paused["pause_id"])
        assert pause is not None and pause.answered_by == "alice"


async def test_a_bearer_request_needs_no_csrf_token_even_beside_a_cookie(
    sqlite_url: str,
) -> None:
    async with serve(payment_agent(sqlite_url), api_keys=KEYS) as client:
        await _sign_in(client)
        _, paused = await paused_turn(client, auth("alice"))
        done = await client.post(
            "/v1/resume", json={"token": paused["pause_token"], "answer": APPROVE},
            headers={**JSON, **auth("alice")},
        )
        assert done.status_code == 200, done.text


async def test_a_forged_or_foreign_cookie_is_not_a_session(sqlite_url: str, tmp_path: Any) -> None:
    async with serve(payment_agent(sqlite_url), api_keys=KEYS) as client:
        cookie = (await _sign_in(client)).cookies[COOKIE_NAME]
    other = f"sqlite:///{tmp_path / 'other.db'}"
    async with serve(payment_agent(other), api_keys=KEYS) as client:
        client.cookies.set(COOKIE_NAME, cookie)
        assert (await client.get("/v1/pauses")).status_code == 401
        assert 'name="key"' in (await client.get("/inbox")).text
    async with serve(payment_agent(sqlite_url), api_keys=KEYS) as client:
        client.cookies.set(COOKIE_NAME, cookie)  # another worker on the same database
        assert (await client.get("/v1/pauses")).status_code == 200
        parts = cookie.split(".")
        parts[1] = base64.urlsafe_b64encode(b"carol").decode().rstrip("=")
        client.cookies.set(COOKIE_NAME, ".".join(parts))  # someone else's name, same MAC
        assert (await client.get("/v1/pauses")).status_code == 401
    changed = KEYS.replace("key-alice", "key-alice-2")
    async with serve(payment_agent(sqlite_url), api_keys=changed) as client:
        client.cookies.set(COOKIE_NAME, cookie)  # the key changed: the session ended
        assert (await client.get("/v1/pauses")).status_code == 401


async def test_sign_out_needs_the_token_and_ends_the_session(sqlite_url: str) -> None:
    async with serve(payment_agent(sqlite_url), api_keys=KEYS) as client:
        await _sign_in(client)
        csrf = _csrf((await client.get("/inbox")).text)
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        refused = await client.post("/inbox/sign-out", content="csrf_token=nope", headers=form)
        assert refused.status_code == 403
        assert (await client.get("/v1/pauses")).status_code == 200

        out = await client.post("/inbox/sign-out", content=f"csrf_token={csrf}", headers=form)
        assert out.status_code == 303
        assert (await client.get("/v1/pauses")).status_code == 401
        assert 'name="key"' in (await client.get("/inbox")).text


async def test_without_keys_the_page_needs_no_sign_in(sqlite_url: str) -> None:
    async with serve(payment_agent(sqlite_url)) as client:
        page = await client.get("/inbox")
        assert page.status_code == 200
        assert "local" in page.text and 'name="key"' not in page.text
        script = await client.get("/inbox/static/inbox.js")
        assert script.status_code == 200
        assert "javascript" in script.headers["content-type"]
