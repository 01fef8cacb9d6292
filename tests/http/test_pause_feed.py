"""``GET /v1/pauses/events`` as a client follows it, on both stores, under real uvicorn.

A client sees the snapshot, then each pause it may answer appear and leave;
it never sees another principal's pause, nor a pause addressed to a scope it
lacks; a token goes only where ``GET /v1/pauses`` would put one; a reconnect
with ``Last-Event-ID`` misses nothing; a client that leaves leaves nothing
running behind it.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from feed_support import FEED, following, ids_of
from http_support import (
    APPROVE,
    JSON,
    KEYS,
    Clock,
    auth,
    client_of,
    paused_turn,
    payment_agent,
    uvicorn_serving,
    within_a_second,
)
from symfonic.core.contracts.principal import Principal
from symfonic.server.app import create_app
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.pause_feed import PauseFeed

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ALICE, BOB, CAROL = auth("alice"), auth("bob"), auth("carol")


async def listed(client: httpx.AsyncClient, headers: dict[str, str]) -> list[dict[str, Any]]:
    response = await client.get("/v1/pauses", headers=headers)
    assert response.status_code == 200
    pauses: list[dict[str, Any]] = response.json()["pauses"]
    return pauses


async def first_page(client: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, Any]:
    """The whole body of the listing's first page: its pauses, total and next cursor."""
    response = await client.get("/v1/pauses", headers=headers)
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


async def resume(client: httpx.AsyncClient, token: str, headers: dict[str, str]) -> None:
    body = {"token": token, "answer": APPROVE}
    done = await client.post("/v1/resume", json=body, headers={**headers, **JSON})
    assert done.json()["status"] == "complete", done.text


async def test_a_client_sees_the_snapshot_then_pauses_appear_and_leave(store_url: str) -> None:
    clock = Clock()
    agent = payment_agent(store_url, pause_ttl=600, clock=clock)
    app = create_app(agent, api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as client:
        _, before = await paused_turn(client, ALICE)
        async with following(client, ALICE) as feed:
            snapshot = await feed.next()
            assert snapshot.event == "pauses.snapshot"
            assert snapshot.data == await first_page(client, ALICE)
            assert [p["pause_id"] for p in snapshot.data["pauses"]] == [before["pause_id"]]
            assert snapshot.data["pauses"][0]["token"] == before["pause_token"]
            position = int(snapshot.id)

            # Listed after the first: a listing orders by creation time (then id).
            clock.advance(1)
            _, paused = await paused_turn(client, ALICE)
            created = await feed.next()
            assert created.event == "pause.created"
            assert int(created.id) > position
            assert created.data["pause_id"] == paused["pause_id"]
            assert created.data["state"] == "pending" and created.data["agent"] == "assistant"
            assert created.data["pause"] == (await listed(client, ALICE))[1]
            assert created.data["pause"]["token"] == paused["pause_token"]

            await resume(client, paused["pause_token"], ALICE)
            claimed, answered = await feed.next(), await feed.next()
            assert (claimed.event, answered.event) == ("pause.claimed", "pause.answered")
            for frame in (claimed, answered):
                assert frame.data["pause_id"] == paused["pause_id"]
                assert frame.data["answered_by"] == "alice"
                assert "pause" not in frame.data  # no token once it cannot be answered
            assert int(created.id) < int(claimed.id) < int(answered.id)
            assert answered.data["decision"] == "approve" and "decision" not in claimed.data

            clock.advance(601)
            await agent.sweep()
            expired = await feed.next()
            assert expired.event == "pause.expired"
            assert expired.data["pause_id"] == before["pause_id"]
            assert expired.data["state"] == "expired" and "answered_by" not in expired.data


async def test_an_answered_frame_says_whether_the_call_was_rejected_edited_or_declined(
    store_url: str,
) -> None:
    app = create_app(payment_agent(store_url), api_keys=KEYS, sweep_interval=0)
    answers = [
        ({"decision": "reject", "reason": "no"}, "resolved", "reject", None),
        ({"decision": "edit", "args": {"amount": 3}}, "resolved", "edit", {"amount": 3}),
        (None, "cancelled", "decline", None),
    ]
    async with uvicorn_serving(app) as client, following(client, ALICE) as feed:
        await feed.next()
        for answer, status, decision, edited in answers:
            _, paused = await paused_turn(client, ALICE)
            body = {"token": paused["pause_token"], "answer": answer, "status": status}
            done = await client.post("/v1/resume", json=body, headers={**ALICE, **JSON})
            assert done.status_code == 200, done.text
            frame = await feed.until("pause.answered")
            assert frame.data["decision"] == decision, frame.data
            assert frame.data.get("edited_args") == edited


async def test_bob_never_sees_alices_pauses(store_url: str) -> None:
    app = create_app(payment_agent(store_url), api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as client:
        _, alices_first = await paused_turn(client, ALICE)
        async with following(client, BOB) as bobs:
            assert (await bobs.next()).data == {"pauses": [], "total": 0, "next_cursor": None}
            _, alices = await paused_turn(client, ALICE)
            await resume(client, alices["pause_token"], ALICE)
            _, his = await paused_turn(client, BOB)
            created = await bobs.next()
            assert (created.event, created.data["pause_id"]) == ("pause.created", his["pause_id"])
            seen = [created, *await bobs.quiet(0.6)]
        assert ids_of(seen) == {his["pause_id"]}
        assert alices["pause_token"] not in str([f.data for f in seen])
        assert alices_first["pause_id"] not in str([f.data for f in seen])


async def test_an_addressed_pause_reaches_only_principals_with_the_scope(store_url: str) -> None:
    approvals = payment_agent(store_url, approval={"pay": "approver"}, name="approvals")
    app = create_app([payment_agent(store_url), approvals], api_keys=KEYS, sweep_interval=0)
    async with (
        uvicorn_serving(app) as client,
        following(client, CAROL) as carols,
        following(client, ALICE) as alices,
    ):
        await carols.next(), await alices.next()
        created = await client.post("/v1/sessions", json={"agent": "approvals"}, headers=ALICE)
        session_id = created.json()["session_id"]
        turn = await client.post(
            f"/v1/sessions/{session_id}/turns", json={"message": "pay"}, headers=ALICE
        )
        assert turn.status_code == 200
        frame = await carols.until("pause.created")
        assert frame.data["pause"]["audience"] == "approver"
        assert frame.data["pause"] == (await listed(client, CAROL))[0]
        token = frame.data["pause"]["token"]
        assert token is not None
        await resume(client, token, CAROL)
        answered = await carols.until("pause.answered")
        assert answered.data["answered_by"] == "carol"
        # Alice asked, but the pause is the approvers' to answer: her feed stays silent.
        assert await alices.quiet(0.6) == []


async def test_a_reconnect_with_last_event_id_misses_nothing(store_url: str) -> None:
    app = create_app(payment_agent(store_url), api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as client:
        async with following(client, ALICE) as feed:
            last = (await feed.next()).id
        # Changes made while the client is away: two pauses, one of them answered.
        _, first = await paused_turn(client, ALICE)
        _, second = await paused_turn(client, ALICE)
        await resume(client, first["pause_token"], ALICE)
        async with following(client, ALICE, **{"Last-Event-ID": last}) as feed:
            missed = [await feed.next() for _ in range(4)]
            assert [(f.event, f.data["pause_id"]) for f in missed] == [
                ("pause.created", first["pause_id"]),
                ("pause.created", second["pause_id"]),
                ("pause.claimed", first["pause_id"]),
                ("pause.answered", first["pause_id"]),
            ]
            # A replayed creation carries the pause only if it can still be answered.
            assert "pause" not in missed[0].data
            assert missed[1].data["pause"]["token"] == second["pause_token"]
            _, third = await paused_turn(client, ALICE)
            live = await feed.until("pause.created", third["pause_id"])
            assert int(live.id) > int(missed[-1].id)
        # A position the store cannot replay from gets the full current list.
        for unknown in ("999999999", "not-a-number"):
            async with following(client, ALICE, **{"Last-Event-ID": unknown}) as feed:
                snapshot = await feed.next()
                assert snapshot.event == "pauses.snapshot"
                assert snapshot.data == await first_page(client, ALICE)


async def test_a_client_that_leaves_leaves_nothing_behind(store_url: str) -> None:
    app = create_app(payment_agent(store_url), api_keys=KEYS, sweep_interval=0)
    feed_of_app: PauseFeed = app.state.pause_feed
    async with uvicorn_serving(app) as client:
        for _ in range(3):
            async with following(client, ALICE) as feed, following(client, BOB) as other:
                await feed.next(), await other.next()
                assert feed_of_app.subscribers == 2
                assert await listeners(store_url) in (0, 1)

        async def all_gone() -> bool:
            return not feed_of_app.subscribers and not await listeners(store_url)

        await within_a_second(all_gone)
        # The feed still works for the next client.
        async with following(client, ALICE) as feed:
            await feed.next()
            _, paused = await paused_turn(client, ALICE)
            assert (await feed.until("pause.created")).data["pause_id"] == paused["pause_id"]


async def listeners(store_url: str) -> int:
    """Connections listening for pause changes (PostgreSQL; 0 on SQLite, which polls)."""
    if not store_url.startswith("postgres"):
        return 0
    import asyncpg

    connection = await asyncpg.connect(store_url.replace("postgresql+asyncpg", "postgresql"))
    try:
        count = await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND query LIKE 'LISTEN%' AND state = 'idle'"
        )
    finally:
        await connection.close()
    return int(count)


async def test_without_a_key_the_feed_is_refused(sqlite_url: str) -> None:
    app = create_app(payment_agent(sqlite_url), api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as client:
        refused = await client.get(FEED)
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "unauthenticated"


async def test_a_subscriber_that_falls_behind_gets_a_fresh_snapshot(sqlite_url: str) -> None:
    agent = payment_agent(sqlite_url)
    host = ServiceHost([agent])
    await host.open()
    feed = PauseFeed(host, queue_limit=2)
    try:
        async with anyio.create_task_group() as tasks:
            await tasks.start(feed.run)
            subscription = await feed.subscribe(Principal("alice"), None)
            items = aiter(subscription)
            first = await anext(items)
            assert first.position == 0 and first.page.pauses == []  # type: ignore[union-attr]
            for _ in range(5):  # more changes than its queue holds, unread
                session_id = await agent.create_session("alice")
                await agent.run("pay", session_id, "alice")

            async def fell_behind() -> bool:
                return any(subscriber.behind for subscriber in feed._subscribers)

            await within_a_second(fell_behind)
            fresh = await anext(items)
            assert len(fresh.page.pauses) == fresh.page.total == 5  # type: ignore[union-attr]
            await subscription.aclose()
            assert feed.subscribers == 0
            tasks.cancel_scope.cancel()
    finally:
        await host.aclose()


async def test_without_the_apps_lifespan_the_feed_says_it_is_unavailable(sqlite_url: str) -> None:
    # Mounted in another app whose lifespan never ran: no watch, so no feed (and no hang).
    app = create_app(payment_agent(sqlite_url), api_keys=KEYS, sweep_interval=0)
    async with client_of(app) as client:
        refused = await client.get(FEED, headers=ALICE)
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "feed_unavailable"
    assert refused.headers["Retry-After"] == "2"


async def test_a_lost_listening_connection_is_replaced_and_followers_resynced(
    postgres_url: str,
) -> None:
    import asyncpg

    app = create_app(payment_agent(postgres_url), api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as client, following(client, ALICE) as feed:
        assert (await feed.next()).event == "pauses.snapshot"
        admin = await asyncpg.connect(postgres_url)
        try:
            terminated = await admin.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND query LIKE 'LISTEN%'"
            )
        finally:
            await admin.close()
        assert terminated == 1
        # Changes may have been missed meanwhile: the follower gets the list again ...
        _, paused = await paused_turn(client, ALICE)
        resynced = await feed.until("pauses.snapshot", wait=5)
        assert paused["pause_id"] in ids_of([resynced])
        # ... and the feed goes on live over a new connection.
        _, later = await paused_turn(client, ALICE)
        assert (await feed.until("pause.created", later["pause_id"])).data["pause"]["token"]
