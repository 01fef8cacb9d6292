"""``GET /v1/audit`` against the real app: an auditor pages through the chain, others get 403."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest

from http_support import APPROVE, JSON, audit_sealed, auth, paused_turn, payment_agent, serve

pytestmark = pytest.mark.anyio

KEYS = "alice=key-alice,carol=key-carol:approver,ida=key-ida:auditor"


async def audit_pages(client: httpx.AsyncClient, limit: int) -> list[list[dict[str, Any]]]:
    pages, cursor = [], None
    while True:
        params: dict[str, Any] = {"limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        response = await client.get("/v1/audit", params=params, headers=auth("ida"))
        assert response.status_code == 200
        pages.append(response.json()["records"])
        cursor = response.json()["next_cursor"]
        if cursor is None:
            return pages


async def test_an_auditor_pages_through_who_asked_and_who_approved(store_url: str) -> None:
    async with serve(payment_agent(store_url), api_keys=KEYS) as client:
        for _ in range(2):
            _, paused = await paused_turn(client, auth("alice"))
            answer = {"token": paused["pause_token"], "answer": APPROVE}
            resumed = await client.post(
                "/v1/resume", json=answer, headers={**JSON, **auth("alice")}
            )
            assert resumed.status_code == 200
        health = await audit_sealed(client)
        pages = await audit_pages(client, limit=4)
        refused = await client.get("/v1/audit", headers=auth("carol"))
        bad = await client.get("/v1/audit", params={"cursor": "bm9wZQ"}, headers=auth("ida"))
    records = [record for page in pages for record in page]
    assert (health["audit_unsealed"], health["audit_unsealed_seconds"]) == (0, 0.0)
    assert [len(page) for page in pages] == [4, 2]
    assert [r["event"] for r in records] == ["asked", "answered", "published"] * 2
    assert [r["sequence"] for r in records] == list(range(1, 7))
    assert all(b["prev_hash"] == a["hash"] for a, b in itertools.pairwise(records))
    answered = records[1]
    assert (answered["principal"], answered["decision"]) == ("alice", "approve")
    assert answered["args_digest"] is not None and answered["agent"] == "assistant"
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_cursor"
