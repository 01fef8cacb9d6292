"""A pause's token has one name on the wire: ``token``, in the SSE ``turn.paused`` event as in
``POST /v1/resume``, the listing and the feed. ``pause_token`` stays beside it, the same
value, deprecated for one release, and the OpenAPI document says both."""

from __future__ import annotations

import pytest

from http_support import approved, served_pause

pytestmark = pytest.mark.anyio


async def test_turn_paused_carries_token_and_the_deprecated_pause_token(sqlite_url: str) -> None:
    async with served_pause(sqlite_url) as served:
        paused = served.paused
        assert paused["token"].startswith("sfp_")
        assert paused["pause_token"] == paused["token"]
        listed = (await served.client.get("/v1/pauses")).json()["pauses"]
        assert [pause["token"] for pause in listed] == [paused["token"]]
        assert (await approved(served.client, paused["token"]))["status"] == "complete"


async def test_the_openapi_document_names_token_and_deprecates_pause_token(
    sqlite_url: str,
) -> None:
    async with served_pause(sqlite_url) as served:
        document = (await served.client.get("/openapi.json")).json()
    schema = document["components"]["schemas"]["TurnPausedEvent"]
    assert "token" in schema["required"] and "pause_token" in schema["required"]
    assert schema["properties"]["token"]["type"] == "string"
    assert schema["properties"]["pause_token"]["deprecated"] is True
