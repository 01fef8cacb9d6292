"""Schemathesis against the OpenAPI document: every response keeps the documented contract.

Every operation, the AG-UI run included, is called with generated valid and
invalid requests, once as principal alice and once without a key, and every
response is checked against the document: its status is one the operation
declares, its content type and headers are the declared ones, its body fits the
declared schema, valid requests are accepted, invalid ones refused, and nothing
is a 5xx. Without a key every operation but the health check must be a 401. The
store already holds a paused session so reads meet real rows. Bounded: a small
``max_examples`` keeps the module within about half a minute on two cores.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    missing_required_header,
    negative_data_rejection,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from http_support import KEYS, payment_agent
from symfonic.server.app import create_app
from symfonic.server.http.key_brake import KeyBrake

pytestmark = pytest.mark.slow

CONTRACT = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    missing_required_header,
]

# The schema is loaded when the module is collected, so the app (and its store)
# must exist then; the store lives in a directory removed when the module ends.
STORE_DIR = Path(tempfile.mkdtemp(prefix="symfonic-schemathesis-"))
STORE = f"sqlite:///{STORE_DIR / 'api.db'}"
# The fuzzer presents many wrong keys from one address; the brake on guessing, which
# would answer them 429, has its own tests (test_key_brake.py).
APP = create_app(
    payment_agent(STORE), api_keys=KEYS, sweep_interval=0, key_brake=KeyBrake(burst=10**6)
)
ALICE = {"auth": {"openapi": {"HTTPBearer": {"bearer": "key-alice"}}}}
# A listing's cursor is opaque: no schema tells the strings a listing handed out
# from any other, so a generated one is refused as the operation documents (400
# invalid_cursor); tests/http/test_pause_pages.py checks cursors for real.
ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]
CURSORS = {
    "operations": [
        {
            "include-path": "/v1/pauses",
            "include-method": "GET",
            "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "400"]}},
        }
    ]
}
# The AG-UI run's body is the ag-ui library's RunAgentInput, whose coverage phase
# (every boundary of every field of every message kind) alone takes longer than the
# rest of the module; its fuzzing still reaches every status the run can answer.
NO_COVERAGE = {"phases": {"coverage": {"enabled": False}}}


def _schema(*configs: dict[str, Any]) -> schemathesis.BaseSchema:
    merged: dict[str, Any] = {}
    for config in configs:
        merged.update(config)
    return schemathesis.openapi.from_asgi(
        "/openapi.json", APP, config=SchemathesisConfig.from_dict(merged)
    )


def _native(schema: schemathesis.BaseSchema) -> schemathesis.BaseSchema:
    return schema.exclude(path="/v1/agui", method="POST")


def _finite(schema: schemathesis.BaseSchema) -> schemathesis.BaseSchema:
    """Every native operation whose response ends: the live feed stays open until the
    client leaves, so it is called only without a key (a 401 ends at once); its frames
    are checked against the document in tests/http/test_pause_feed_contract.py."""
    return _native(schema).exclude(path="/v1/pauses/events", method="GET")


def _agui_run(schema: schemathesis.BaseSchema) -> schemathesis.BaseSchema:
    return schema.include(path="/v1/agui", method="POST")


BOUNDED = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
FEWER = settings(BOUNDED, max_examples=15)


def _as_alice(case: Any) -> None:
    case.call_and_validate(checks=[*CONTRACT, ignored_auth])


def _without_a_key(case: Any) -> None:
    response = case.call_and_validate(checks=CONTRACT)
    if case.path.startswith("/v1/health"):  # the probes need no key
        return
    # Only the router answers before authentication: a path it matches to no route
    # (a generated id with a slash in it) or a method the route does not have.
    routed = response.status_code not in (404, 405) or response.json()["error"]["code"] in (
        "session_not_found", "pause_not_found", "unknown_agent"
    )
    assert response.status_code == 401 or not routed, response.text


@pytest.fixture(scope="module", autouse=True)
def paused_session() -> Iterator[None]:
    """A session of alice's that paused, so generated reads can meet real rows."""

    async def seed() -> None:
        async with payment_agent(STORE) as agent:
            session_id = await agent.create_session("alice")
            await agent.run("pay", session_id, "alice")

    anyio.run(seed)
    yield
    shutil.rmtree(STORE_DIR, ignore_errors=True)


@_finite(_schema(ALICE, CURSORS)).parametrize()
@BOUNDED
def test_every_operation_keeps_its_contract_for_a_principal(case: Any) -> None:
    _as_alice(case)


@_native(_schema()).parametrize()
@BOUNDED
def test_every_operation_keeps_its_contract_without_a_key(case: Any) -> None:
    _without_a_key(case)


@_agui_run(_schema(ALICE, NO_COVERAGE)).parametrize()
@FEWER
def test_the_agui_run_keeps_its_contract_for_a_principal(case: Any) -> None:
    _as_alice(case)


@_agui_run(_schema(NO_COVERAGE)).parametrize()
@FEWER
def test_the_agui_run_keeps_its_contract_without_a_key(case: Any) -> None:
    _without_a_key(case)
