"""The live feed as the OpenAPI document describes it: every frame it sends fits.

The document declares ``GET /v1/pauses/events`` as a ``text/event-stream`` with
one item schema per frame type; the frames a real feed sends (a snapshot, a
creation with its pause, a claim, an answer) are validated against the schemas
the document names, so a client generated from it reads what the feed sends.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from feed_support import FEED, following
from http_support import APPROVE, JSON, KEYS, auth, paused_turn, payment_agent, uvicorn_serving
from symfonic.agent.fastapi.app import create_app

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ALICE = auth("alice")


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
            "pauses.snapshot", "pause.created", "pause.claimed", "pause.answered"
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
