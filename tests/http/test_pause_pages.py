"""``GET /v1/pauses`` a page at a time: complete, counted, filtered, and strict about its input.

A caller with more pauses than fit on a page follows ``next_cursor`` until it
is null and has then seen each of its pauses once; ``total`` says how many
that is from the first page on. A cursor the service did not hand out, or a
limit beyond the maximum, is refused in words before the store is asked.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from bulk_pauses import bulk_pauses
from http_support import KEYS, auth, paused_turn, payment_agent, serve
from symfonic.core.contracts.types import InteractionKind

pytestmark = pytest.mark.anyio

START = datetime.now(UTC) - timedelta(hours=1)
CAROL = auth("carol")  # holds the scope ``approver``


async def every_page(
    client: httpx.AsyncClient, headers: dict[str, str], **params: Any
) -> tuple[list[dict[str, Any]], list[int]]:
    """Every pause, following ``next_cursor``; and the ``total`` each page gave."""
    pauses: list[dict[str, Any]] = []
    totals: list[int] = []
    cursor: str | None = None
    while True:
        query = {**params, **({"cursor": cursor} if cursor else {})}
        response = await client.get("/v1/pauses", params=query, headers=headers)
        assert response.status_code == 200, response.text
        body = response.json()
        pauses += body["pauses"]
        totals.append(body["total"])
        cursor = body["next_cursor"]
        if cursor is None:
            return pauses, totals


async def test_following_next_cursor_reaches_every_pause_once(store_url: str) -> None:
    agent = payment_agent(store_url)
    async with serve(agent, api_keys=KEYS) as client:
        scoped = await bulk_pauses(
            agent.store,
            [f"refund {i}?" for i in range(120)],
            start=START,
            principal="bob",
            audience="approver",
        )
        own = await bulk_pauses(agent.store, ["carol's own?"] * 3, start=START, principal="carol")
        await bulk_pauses(agent.store, ["bob's own?"] * 4, start=START, principal="bob")

        first = (await client.get("/v1/pauses", headers=CAROL)).json()
        listed, totals = await every_page(client, CAROL)
        bobs, _ = await every_page(client, auth("bob"), limit=500)

    assert len(first["pauses"]) == 50, "the default page holds 50"
    expected = sorted(scoped + own, key=lambda p: (p.created_at, p.pause_id))
    assert [p["pause_id"] for p in listed] == [p.pause_id for p in expected]
    assert totals == [123, 123, 123]
    assert all(p["token"] for p in listed)
    # bob's addressed pauses are carol's scope's, not his own to answer.
    assert len(bobs) == 4


async def test_a_page_keeps_every_field_the_listing_had(sqlite_url: str) -> None:
    agent = payment_agent(sqlite_url)
    async with serve(agent) as client:
        await paused_turn(client)
        await paused_turn(client)
        page = (await client.get("/v1/pauses", params={"limit": 1, "details": "true"})).json()
        rest = await client.get(
            "/v1/pauses", params={"cursor": page["next_cursor"], "details": "true"}
        )

    [pause] = page["pauses"]
    assert page["total"] == 2 and page["next_cursor"]
    assert pause["tool_name"] == "pay" and pause["tool_args"] == {"amount": 5}
    assert pause["token"] and pause["asked_by"] == "local" and pause["created_at"]
    [second] = rest.json()["pauses"]
    assert second["tool_name"] == "pay" and rest.json()["next_cursor"] is None


async def test_filters_narrow_the_page_and_the_total(sqlite_url: str) -> None:
    agent = payment_agent(sqlite_url)
    async with serve(agent, api_keys=KEYS) as client:
        store = agent.store
        await bulk_pauses(store, ["Ship to Lyon?", "ship to Oslo?"], start=START, principal="carol")
        refunds = await bulk_pauses(
            store,
            ["Refund 40% of order 7?"],
            start=START + timedelta(seconds=1),
            principal="bob",
            audience="approver",
            kind=InteractionKind.APPROVAL,
        )
        # Another service's agent, on the same database: never this one's to list.
        await bulk_pauses(store, ["ship elsewhere?"], start=START, principal="carol", agent="other")

        async def listed(**params: Any) -> tuple[list[str], int]:
            body = (await client.get("/v1/pauses", params=params, headers=CAROL)).json()
            return [p["query"] for p in body["pauses"]], body["total"]

        assert await listed() == (["Ship to Lyon?", "ship to Oslo?", refunds[0].query], 3)
        assert await listed(q="SHIP") == (["Ship to Lyon?", "ship to Oslo?"], 2)
        assert await listed(q="40%") == ([refunds[0].query], 1)
        assert await listed(q="4_%") == ([], 0)
        assert await listed(kind="approval") == ([refunds[0].query], 1)
        assert await listed(audience="approver") == ([refunds[0].query], 1)
        assert await listed(agent="assistant", q="oslo") == (["ship to Oslo?"], 1)
        assert await listed(agent="other") == ([], 0)


def _cursor_of(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "not a cursor",
        "Zm9v",  # "foo"
        _cursor_of("2030-01-01T00:00:00+00:00|x' OR '1'='1"),
        _cursor_of("2030-01-01T00:00:00|abc"),  # no offset: not a time a listing gives
        _cursor_of("yesterday|abc"),
        "A" * 300,
    ],
)
async def test_a_cursor_no_listing_handed_out_is_refused_in_words(
    sqlite_url: str, cursor: str
) -> None:
    async with serve(payment_agent(sqlite_url)) as client:
        await paused_turn(client)
        response = await client.get("/v1/pauses", params={"cursor": cursor})

    if len(cursor) > 200:
        assert response.status_code == 422
        assert "cursor" in response.json()["error"]["message"]
        return
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_cursor"
    assert "next_cursor" in error["message"]


@pytest.mark.parametrize("limit", ["0", "501", "ten"])
async def test_a_limit_out_of_range_is_refused_in_words(sqlite_url: str, limit: str) -> None:
    async with serve(payment_agent(sqlite_url)) as client:
        response = await client.get("/v1/pauses", params={"limit": limit})
        largest = await client.get("/v1/pauses", params={"limit": "500"})

    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["message"].startswith("limit: ")
    if limit == "501":
        assert "500" in error["message"]
    assert largest.status_code == 200


async def test_the_python_listing_returns_every_pause(sqlite_url: str) -> None:
    async with payment_agent(sqlite_url) as agent:
        made = await bulk_pauses(agent.store, ["which?"] * 520, start=START, principal="dora")
        listed = await agent.pauses("dora")

    assert [p.pause_id for p in listed] == [p.pause_id for p in made]
