"""Authentication comes before anything else a request could be refused for.

A caller without a valid key gets 401 on every operation that needs one,
however malformed its body, path or query: it must not learn what a well-formed
request looks like, and a validation error must not be the first thing the
service says to a stranger. The operations come from the OpenAPI document, so a
route added later is covered without editing this test.
"""

from __future__ import annotations

from typing import Any

import pytest

from http_support import KEYS, payment_agent, serve
from symfonic.server.http.key_brake import KeyBrake

pytestmark = pytest.mark.anyio

MALFORMED_BODIES: list[tuple[bytes, str | None]] = [
    (b"{not json", "application/json"),
    (b'{"a": ', "application/json"),
    (b"\xff\xfe\x00", "application/json"),
    (b"[]", "application/json"),
    (b"42", "application/json"),
    (b'{"unknown": true, "message": 5, "token": [], "base_revision": true}', "application/json"),
    (b"[" * 10_000, "application/json"),
    (b"message=hi", "application/x-www-form-urlencoded"),
    (b"plain", "text/plain"),
    (b"", None),
]
BAD_PATH_VALUES = ["not a valid id!", "x" * 300, "ok-id"]
BAD_QUERY = "state=bogus&agent=&agent=%00&limit=-1"
NO_KEY: list[dict[str, str]] = [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "x"}]


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    ]


def _paths(template: str) -> list[str]:
    if "{" not in template:
        return [template]
    out = []
    for value in BAD_PATH_VALUES:
        path = template
        while "{" in path:
            start, end = path.index("{"), path.index("}")
            path = path[:start] + value.replace(" ", "%20") + path[end + 1 :]
        out.append(path)
    return out


async def test_every_operation_refuses_an_unauthenticated_malformed_request_with_401(
    sqlite_url: str,
) -> None:
    # Hundreds of wrong keys from one address: the brake on guessing would answer 429;
    # it has its own tests (test_key_brake.py), this one is about the order of checks.
    unbraked = KeyBrake(burst=10**6)
    async with serve(payment_agent(sqlite_url), api_keys=KEYS, key_brake=unbraked) as client:
        document = (await client.get("/openapi.json")).json()
        operations = _operations(document)
        guarded = [op for op in operations if "401" in op[2]["responses"]]
        # Every operation but the health check and its probes needs a key, and says so.
        assert {path for _, path, op in operations if op not in [g[2] for g in guarded]} == {
            "/v1/health",
            "/v1/health/live",
            "/v1/health/ready",
        }
        assert len(guarded) >= 6
        for method, template, _ in guarded:
            for path in _paths(template):
                for body, content_type in MALFORMED_BODIES:
                    for headers in NO_KEY:
                        sent = {**headers, **({"Content-Type": content_type}
                                              if content_type else {})}
                        response = await client.request(
                            method, f"{path}?{BAD_QUERY}", content=body, headers=sent
                        )
                        where = f"{method} {path} {body[:20]!r} {headers}"
                        assert response.status_code == 401, (where, response.text)
                        assert response.json()["error"]["code"] == "unauthenticated"
                        assert response.headers["www-authenticate"] == "Bearer"
