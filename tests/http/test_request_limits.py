"""Answers and session metadata are bounded, and refused in words, costing little.

A body far over its route's bound is refused with 413 before it is parsed; one
that fits the body cap but whose answer or metadata is over its bound as JSON
(64 KiB for an answer, 16 KiB for metadata), or an answer nested deeper than 32
levels, is a 422 that says which bound and by how much. A refused answer
leaves the pause pending and its token unspent.
"""

from __future__ import annotations

import json

import httpx
import pytest

from http_support import JSON, approved, served_pause
from symfonic.capabilities.human.answers import MAX_ANSWER_BYTES, MAX_ANSWER_DEPTH
from symfonic.server.http.limits import ANSWER_BODY_SIZE, SESSION_BODY_SIZE
from symfonic.server.http.schemas import MAX_METADATA_BYTES

pytestmark = pytest.mark.anyio


async def _pending(client: httpx.AsyncClient) -> list[str]:
    listed = (await client.get("/v1/pauses")).json()["pauses"]
    return [pause["state"] for pause in listed]


def _answer_body(token: str, answer: object) -> bytes:
    return json.dumps({"token": token, "answer": answer}, separators=(",", ":")).encode()


async def test_an_answer_of_300000_keys_is_refused_before_it_is_parsed(sqlite_url: str) -> None:
    async with served_pause(sqlite_url) as served:
        token = served.paused["pause_token"]
        answer = {"decision": "edit", "args": {str(n): 0 for n in range(300_000)}}
        body = _answer_body(token, answer)
        assert ANSWER_BODY_SIZE < len(body) < 4 << 20  # under the service-wide cap
        response = await served.client.post(
            "/v1/resume", content=body, headers={**JSON, "Content-Type": "application/json"}
        )
        assert response.status_code == 413, response.text
        error = response.json()["error"]
        assert error["code"] == "content_too_large"
        assert error["message"] == (
            f"the request body is larger than {ANSWER_BODY_SIZE} bytes, the most this route "
            "accepts"
        )
        assert await _pending(served.client) == ["pending"]
        assert (await approved(served.client, token))["status"] == "complete"


async def test_an_answer_over_its_bounds_is_422_in_words_and_the_token_unspent(
    sqlite_url: str,
) -> None:
    async with served_pause(sqlite_url) as served:
        token = served.paused["pause_token"]
        large = {"decision": "edit", "args": {"note": "x" * (MAX_ANSWER_BYTES + 1)}}
        response = await served.client.post(
            "/v1/resume", json={"token": token, "answer": large}, headers=JSON
        )
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert error["code"] == "invalid_answer"
        assert error["message"].startswith("the answer is ")
        assert error["message"].endswith(f"bytes as JSON; at most {MAX_ANSWER_BYTES} are accepted")

        deep: object = "approve"
        for _ in range(MAX_ANSWER_DEPTH + 1):
            deep = [deep]
        response = await served.client.post(
            "/v1/resume", json={"token": token, "answer": deep}, headers=JSON
        )
        assert response.status_code == 422, response.text
        assert response.json()["error"] == {
            "code": "invalid_answer",
            "message": f"the answer is nested deeper than {MAX_ANSWER_DEPTH} levels",
        }
        assert await _pending(served.client) == ["pending"]
        assert (await approved(served.client, token))["status"] == "complete"


async def test_session_metadata_is_bounded(sqlite_url: str) -> None:
    async with served_pause(sqlite_url) as served:
        client = served.client
        huge = {"notes": ["x" * 1000] * 3800}  # 3.8 MB, as the fault run sent
        response = await client.post("/v1/sessions", json={"metadata": huge})
        assert response.status_code == 413
        assert response.json()["error"]["message"] == (
            f"the request body is larger than {SESSION_BODY_SIZE} bytes, the most this route "
            "accepts"
        )
        over = {"note": "x" * MAX_METADATA_BYTES}
        response = await client.post("/v1/sessions", json={"metadata": over})
        assert response.status_code == 422
        error = response.json()["error"]
        assert error["code"] == "invalid_request"
        size = len(json.dumps(over, separators=(",", ":")).encode())
        assert error["message"] == (
            f"metadata: metadata is {size} bytes as JSON; at most {MAX_METADATA_BYTES} are "
            "accepted"
        )
        fits = {"note": "x" * (MAX_METADATA_BYTES - 100)}
        assert (await client.post("/v1/sessions", json={"metadata": fits})).status_code == 201
