"""The live feed as the OpenAPI document describes it: every frame it sends fits.

The document declares ``GET /v1/pauses/events`` as a ``text/event-stream`` with
one item schema per frame type; the frames a real feed sends (a snapshot, a
creation with its pause, a claim, an answer) are validated against the schemas
the document names, so a client generated from it reads what the feed sends.
The snapshot is the listing's first page with its ``total`` and ``next_cursor``:
however many pauses wait, it holds one page, and the listing's cursor reaches
the rest.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from bulk_pauses import bulk_pauses
from feed_support import FEED, FeedReader, following
from http_support import (
    APPROVE,
    JSON,
    KEYS,
    Frame,
    auth,
    paused_turn,
    payment_agent,
    uvicorn_serving,
)
from symfonic.server.app import create_app

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ALICE = auth("alice")


def _fits(document: dict[str, Any], frame: Frame) -> None:
    """``frame`` fits the stream item schema the document gives its event type."""
    operation = document["paths"][FEED]["get"]
    stream = operation["responses"]["200"]["content"]["text/event-stream"]
    item = {"event": frame.event, "data": json.dumps(frame.data), "id": frame.id}
    [fits] = [
        alternative
        for alternative in stream["itemSchema"]["oneOf"]
        if frame.event in alternative["properties"]["event"]["enum"]
    ]
    _validator(document, fits).validate(item)
    _validator(document, fits["properties"]["data"]["contentSchema"]).validate(frame.data)


def _validator(document: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    """``schema``, its ``#/components/...`` references resolved in the document."""
    return Draft202012Validator({**schema, "components": document["components"]})


async def test_every_frame_fits_the_documented_stream(sqlite_url: str) -> None:
    app = create_app(payment_agent(sqlite_url), api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as client:
        document = (await client.get("/openapi.json")).json()
        operation = document["paths"][FEED]["get"]
        assert {"200", "401", "503"} <= set(operation["responses"])
        stream = operation["responses"]["200"]["content"]["text/event-stream"]
        alternatives = stream["itemSchema"]["oneOf"]
        assert any(p["name"] == "last-event-id" for p in operation["parameters"])

        async with following(client, ALICE) as feed:
            frames = [await feed.next()]
            _, paused = await paused_turn(client, ALICE)
            frames.append(await feed.next())
            body = {"token": paused["pause_token"], "answer": APPROVE}
            await client.post("/v1/resume", json=body, headers={**ALICE, **JSON})
            frames += [await feed.next(), await feed.next()]

        assert [f.event for f in frames] == [
            "pauses.snapshot",
            "pause.created",
            "pause.claimed",
            "pause.answered",
        ]
        for frame in frames:
            item = {"event": frame.event, "data": json.dumps(frame.data), "id": frame.id}
            [fits] = [
                alternative
                for alternative in alternatives
                if frame.event in alternative["properties"]["event"]["enum"]
            ]
            _validator(document, fits).validate(item)
            data_schema = fits["properties"]["data"]["contentSchema"]
            _validator(document, data_schema).validate(frame.data)


async def test_the_snapshot_is_the_first_page_and_the_listing_pages_the_rest(
    sqlite_url: str,
) -> None:
    agent = payment_agent(sqlite_url)
    app = create_app(agent, api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as client:
        document = (await client.get("/openapi.json")).json()
        made = await bulk_pauses(
            agent.store,
            [f"refund {i}?" for i in range(130)],
            # Made an hour ago, so the pause created while following comes after them.
            start=datetime.now(UTC) - timedelta(hours=1),
            principal="alice",
        )
        async with following(client, ALICE) as feed:
            snapshot = await feed.next()
            _, paused = await paused_turn(client, ALICE)
            created = await feed.until("pause.created")

        seen = [p["pause_id"] for p in snapshot.data["pauses"]]
        cursor = snapshot.data["next_cursor"]
        while cursor is not None:
            page = await client.get("/v1/pauses", params={"cursor": cursor}, headers=ALICE)
            assert page.status_code == 200, page.text
            seen += [p["pause_id"] for p in page.json()["pauses"]]
            cursor = page.json()["next_cursor"]

    _fits(document, snapshot)
    assert snapshot.event == "pauses.snapshot"
    assert len(snapshot.data["pauses"]) == 50 and snapshot.data["total"] == 130
    assert all(p["token"] for p in snapshot.data["pauses"])
    # The pages after the snapshot reach every pause it counted, and the one
    # created since, which also came as its own frame.
    assert seen == [p.pause_id for p in made] + [paused["pause_id"]]
    assert created.data["pause_id"] == paused["pause_id"]


async def test_with_details_the_snapshot_and_each_creation_carry_the_gated_call(
    sqlite_url: str,
) -> None:
    app = create_app(payment_agent(sqlite_url), api_keys=KEYS, sweep_interval=0)
    async with uvicorn_serving(app) as client:
        document = (await client.get("/openapi.json")).json()
        await paused_turn(client, ALICE)
        params = {"details": "true"}
        async with client.stream("GET", FEED, params=params, headers=ALICE) as response:
            feed = FeedReader(response)
            snapshot = await feed.next()
            _, paused = await paused_turn(client, ALICE)
            created = await feed.until("pause.created")
        async with following(client, ALICE) as plain:
            undetailed = await plain.next()

    for frame in (snapshot, created):
        _fits(document, frame)
    [first] = snapshot.data["pauses"]
    assert (first["tool_name"], first["tool_args"]) == ("pay", {"amount": 5})
    assert first["recent_messages"][0]["content"] == "pay 5"
    assert created.data["pause"]["tool_name"] == "pay"
    assert created.data["pause"]["pause_id"] == paused["pause_id"]
    # Without asking, a frame costs no checkpoint read and carries none of it.
    assert all(p["tool_name"] is None for p in undetailed.data["pauses"])
