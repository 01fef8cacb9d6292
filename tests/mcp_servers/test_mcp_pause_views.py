"""Every view of an MCP server's question names the server that asked.

The pause's row (on both stores), the caller's result, ``GET /v1/pauses`` read
raw and through the client's models, and a webhook's body all carry ``server``:
the server's name as the agent's connections name it.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import jsonschema
import pytest

from mcp_support import stdio_connection  # type: ignore[import-not-found]
from symfonic import SymfonicAgent
from symfonic.client import AsyncSymfonicClient
from symfonic.core.contracts.webhooks import WebhookEventType
from symfonic.mcp import MCPTools
from symfonic.server.app import create_app
from symfonic.server.service.webhook_payloads import pause_data
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SCHEMA = Path(__file__).parents[2] / "docs" / "webhook-payloads.schema.json"


async def test_the_row_the_listing_the_client_and_webhooks_name_the_server(
    store_url: str, tmp_path: Path
) -> None:
    script = [call("add_payee", {"name": "bob"}), reply("Added bob.")]
    async with MCPTools({"bank": stdio_connection(tmp_path / "ledger")}) as tools:
        agent = SymfonicAgent(
            model=ScriptedChatModel.from_script(script), tools=tools, store=store_url
        )
        app = create_app(agent, api_keys="", sweep_interval=0)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app)
            async with (
                AsyncSymfonicClient("http://symfonic", transport=transport) as client,
                httpx.AsyncClient(transport=transport, base_url="http://symfonic") as http,
            ):
                paused = await client.run("add bob as a payee")
                assert paused.pause is not None and paused.pause.server == "bank"
                (listed,) = (await client.list_pauses()).pauses
                raw = (await http.get("/v1/pauses")).json()["pauses"]
            row = await agent.store.get_pause(paused.pause.pause_id)
    assert listed.server == "bank" and listed.query == "What is bob's IBAN?"
    assert [pause["server"] for pause in raw] == ["bank"]
    assert row is not None and row.server == "bank"
    body = pause_data(row, WebhookEventType.PAUSE_CREATED, inbox_url=None, token=None)
    payload = {"type": "pause.created", "timestamp": row.created_at.isoformat(), "data": {}}
    payload["data"] = body.model_dump(mode="json")
    jsonschema.validate(payload, json.loads(SCHEMA.read_text()))
    assert payload["data"]["server"] == "bank"
