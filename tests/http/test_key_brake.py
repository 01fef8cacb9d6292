"""Guessing keys is braked on every route, per client address and per key prefix.

After ten wrong keys an address is refused with 429 ``too_many_failed_keys`` and
``Retry-After``, on whichever route it tries next, before its key is checked:
a right key from that address is refused too, so a guess made while braked
learns nothing. Parallel guesses are each counted. Guesses that share a key's
first half are braked together from however many addresses they come. The
inbox's sign-in form shares the brake. Another address, with its own key, is
served throughout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx
import pytest
from fastapi import FastAPI

from http_support import KEYS, auth, payment_agent
from symfonic.core.contracts.errors import TooManyFailedKeys
from symfonic.server.app import create_app
from symfonic.server.http.key_brake import DEFAULT_BURST, KeyBrake

pytestmark = pytest.mark.anyio

ROUTES = [("GET", "/v1/pauses"), ("POST", "/v1/sessions"), ("GET", "/v1/sessions/s-1"),
          ("POST", "/v1/agui"), ("POST", "/v1/resume"), ("GET", "/v1/agui/capabilities"),
          ("GET", "/v1/webhooks/deliveries")]


@asynccontextmanager
async def app_of(store_url: str) -> AsyncIterator[FastAPI]:
    app = create_app(payment_agent(store_url), api_keys=KEYS, sweep_interval=0)
    async with app.router.lifespan_context(app):
        yield app


def client_from(app: FastAPI, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://test")


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_wrong_keys_on_any_route_brake_the_address_and_others_are_served(
    sqlite_url: str,
) -> None:
    async with app_of(sqlite_url) as app, client_from(app, "203.0.113.7") as guesser:
        statuses = []
        for attempt in range(DEFAULT_BURST):
            method, path = ROUTES[attempt % len(ROUTES)]
            response = await guesser.request(method, path, headers=bearer(f"guess-{attempt:04}"))
            statuses.append(response.status_code)
        assert statuses == [401] * DEFAULT_BURST
        for method, path in ROUTES:
            braked = await guesser.request(method, path, headers=bearer("one-more-guess"))
            assert braked.status_code == 429, (method, path, braked.text)
            assert braked.json()["error"]["code"] == "too_many_failed_keys"
            assert "wrong API keys" in braked.json()["error"]["message"]
            assert 1 <= int(braked.headers["Retry-After"]) <= 10
        # Even the right key: from a braked address, a guess would learn nothing.
        assert (await guesser.get("/v1/pauses", headers=auth("alice"))).status_code == 429
        # Asking without a key is not a guess, and is told how to authenticate.
        assert (await guesser.get("/v1/pauses")).status_code == 401
        async with client_from(app, "198.51.100.2") as other:
            assert (await other.get("/v1/pauses", headers=auth("alice"))).status_code == 200


async def test_parallel_guesses_are_each_counted(sqlite_url: str) -> None:
    async with app_of(sqlite_url) as app, client_from(app, "203.0.113.8") as guesser:
        statuses: list[int] = []

        async def guess(n: int) -> None:
            response = await guesser.get("/v1/pauses", headers=bearer(f"parallel-{n:04}"))
            statuses.append(response.status_code)

        async with anyio.create_task_group() as tasks:
            for n in range(50):
                tasks.start_soon(guess, n)
    assert sorted(statuses) == [401] * DEFAULT_BURST + [429] * (50 - DEFAULT_BURST)


async def test_guesses_sharing_a_keys_first_half_are_braked_from_any_address(
    sqlite_url: str,
) -> None:
    # "key-alice" is 9 characters: its first half is "key-".
    async with app_of(sqlite_url) as app:
        statuses = []
        for n in range(DEFAULT_BURST + 1):
            async with client_from(app, f"192.0.2.{n + 1}") as guesser:
                response = await guesser.get("/v1/pauses", headers=bearer(f"key-{n:05}"))
                statuses.append(response.status_code)
        assert statuses == [401] * DEFAULT_BURST + [429]
        async with client_from(app, "192.0.2.200") as fresh:
            assert (await fresh.get("/v1/pauses", headers=bearer("other-99"))).status_code == 401


async def test_the_inbox_form_shares_the_brake(sqlite_url: str) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    async with app_of(sqlite_url) as app, client_from(app, "203.0.113.9") as guesser:
        statuses: list[int] = []

        async def sign_in(n: int) -> None:
            response = await guesser.post("/inbox", content=f"key=form-{n:04}", headers=form)
            statuses.append(response.status_code)

        async with anyio.create_task_group() as tasks:
            for n in range(DEFAULT_BURST + 5):
                tasks.start_soon(sign_in, n)
        assert sorted(statuses) == [401] * DEFAULT_BURST + [429] * 5
        braked = await guesser.post("/inbox", content="key=key-alice", headers=form)
        assert braked.status_code == 429
        assert "Too many keys" in braked.text and "Wait" in braked.text
        # And what the form taught the brake holds on the API too.
        assert (await guesser.get("/v1/pauses", headers=auth("alice"))).status_code == 429


def test_one_more_failure_is_allowed_every_interval() -> None:
    now = [0.0]
    brake = KeyBrake(burst=2, interval=6.0, clock=lambda: now[0])
    brake.failed("a", "guess-one")
    brake.failed("a", "guess-two")
    with pytest.raises(TooManyFailedKeys) as braked:
        brake.check("a", "guess-three")
    assert braked.value.retry_after == 6
    now[0] = 4.0
    with pytest.raises(TooManyFailedKeys) as braked:
        brake.check("a", "guess-three")
    assert braked.value.retry_after == 2
    now[0] = 6.0
    brake.check("a", "guess-three")
    brake.check("b", "guess-three")
