"""Schemathesis over docs/openapi.json, on SQLite and PostgreSQL: every response keeps
the documented contract (declared status, headers and schema; no 5xx), and no request
of bob's, aimed at alice's session, pause, run and token, is granted or changes them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.python import asgi
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

from conftest import drop_postgres_database, fresh_postgres_database, require_postgres
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

DOCUMENT = str(Path(__file__).parents[2] / "docs" / "openapi.json")
BASE = f"http://{asgi.HOST}"
ALICE = {"auth": {"openapi": {"HTTPBearer": {"bearer": "key-alice"}}}}
BOB = {"auth": {"openapi": {"HTTPBearer": {"bearer": "key-bob"}}}}
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


class StoreApp:
    """The app of the store the module is testing now: the schemas are built when the
    module is collected, before any store is."""

    current: FastAPI | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert self.current is not None
        await self.current(scope, receive, send)


STORE_APP = StoreApp()


@dataclass(frozen=True)
class Seeded:
    """The app under test, on a store holding a paused session and an ended run of alice's."""

    app: FastAPI
    session_id: str
    pause_id: str
    token: str
    run_id: str

    def alices_rows(self) -> dict[str, Any]:
        """What alice reads of her rows: her session, her pending pauses, her run."""
        # On the loop the fuzzer's requests run on, which the store's pool belongs to.
        with asgi.get_client(self.app) as client:
            client.headers["Authorization"] = "Bearer key-alice"
            session = client.get(f"{BASE}/v1/sessions/{self.session_id}").json()
            pauses = client.get(f"{BASE}/v1/pauses").json()["pauses"]
            run = client.get(f"{BASE}/v1/runs/{self.run_id}").json()
        return {
            "revision": session["revision"],
            "pauses": sorted((p["pause_id"], p["state"]) for p in pauses),
            "run": (run["state"], run.get("outcome")),
        }


async def _seed(store: str) -> tuple[str, str, str, str]:
    async with payment_agent(store) as agent:
        session_id = await agent.create_session("alice")
        paused = await agent.run("pay", session_id, "alice")
        assert paused.pause is not None
        async with anyio.create_task_group() as tasks:
            run = await agent.start("note", None, "alice", tasks=tasks)
            await run.join()
    return session_id, paused.pause.pause_id, paused.pause.token, run.run_id


STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(scope="module", params=STORES)
def seeded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Seeded]:
    """One store of each kind for the module, seeded once: the runs are many and short."""
    database = None
    if request.param == "sqlite":
        store = f"sqlite:///{tmp_path_factory.mktemp('schemathesis') / 'api.db'}"
    else:
        require_postgres()
        store, database = fresh_postgres_database()
    # The fuzzer presents many wrong keys from one address; the brake on guessing, which
    # would answer them 429, has its own tests (test_key_brake.py).
    app = create_app(
        payment_agent(store), api_keys=KEYS, sweep_interval=0, key_brake=KeyBrake(burst=10**6)
    )
    STORE_APP.current = app
    try:
        yield Seeded(app, *anyio.run(_seed, store))
    finally:
        STORE_APP.current = None
        # The app's lifespan, started by the last read of alice's rows, ends before its
        # database goes: it would otherwise end at the next test's teardown, and fail it.
        asgi.shutdown_lifespans()
        if database is not None:
            drop_postgres_database(database)


def _schema(*configs: dict[str, Any]) -> schemathesis.BaseSchema:
    merged: dict[str, Any] = {}
    for config in configs:
        merged.update(config)
    schema = schemathesis.openapi.from_path(DOCUMENT, config=SchemathesisConfig.from_dict(merged))
    schema.app = STORE_APP
    return schema


def _native(schema: schemathesis.BaseSchema) -> schemathesis.BaseSchema:
    return schema.exclude(path="/v1/agui", method="POST")


def _finite(schema: schemathesis.BaseSchema) -> schemathesis.BaseSchema:
    """Every native operation whose response ends: the live feed stays open until the
    client leaves, so it is called only without a key (a 401 ends at once); its frames
    are checked against the document in tests/http/test_pause_feed_contract.py."""
    return _native(schema).exclude(path="/v1/pauses/events", method="GET")


def _agui_run(schema: schemathesis.BaseSchema) -> schemathesis.BaseSchema:
    return schema.include(path="/v1/agui", method="POST")


@pytest.fixture(scope="module")
def alices_rows(seeded: Seeded) -> Iterator[None]:
    """Bob's requests, all of them aimed at alice's rows, leave them as alice read them."""
    before = seeded.alices_rows()
    yield
    assert seeded.alices_rows() == before


BOUNDED = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
FEWER = settings(BOUNDED, max_examples=15)


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


@_finite(_schema(ALICE, CURSORS)).parametrize()
@BOUNDED
def test_every_operation_keeps_its_contract_for_a_principal(case: Any, seeded: Seeded) -> None:
    case.call_and_validate(checks=[*CONTRACT, ignored_auth])


@_native(_schema()).parametrize()
@BOUNDED
def test_every_operation_keeps_its_contract_without_a_key(case: Any, seeded: Seeded) -> None:
    _without_a_key(case)


@_agui_run(_schema(ALICE, NO_COVERAGE)).parametrize()
@FEWER
def test_the_agui_run_keeps_its_contract_for_a_principal(case: Any, seeded: Seeded) -> None:
    case.call_and_validate(checks=[*CONTRACT, ignored_auth])


@_agui_run(_schema(NO_COVERAGE)).parametrize()
@FEWER
def test_the_agui_run_keeps_its_contract_without_a_key(case: Any, seeded: Seeded) -> None:
    _without_a_key(case)


@_schema(BOB, NO_COVERAGE).exclude(path="/v1/pauses/events", method="GET").parametrize()
@FEWER
def test_no_request_of_bobs_touches_alices_rows(
    case: Any, seeded: Seeded, alices_rows: None
) -> None:
    """Each request, its ids and token alice's, is refused without telling they exist:
    never 2xx, 409 or 410 (bob's own new session aside)."""
    for name in case.path_parameters or {}:
        case.path_parameters[name] = getattr(seeded, name, case.path_parameters[name])
    if isinstance(case.body, dict):
        aimed = {"token": seeded.token, "threadId": seeded.session_id}
        case.body.update({key: aimed[key] for key in aimed.keys() & case.body.keys()})
    response = case.call_and_validate(checks=[not_a_server_error])
    if case.path_parameters or case.path == "/v1/resume":
        assert response.status_code not in (200, 201, 202, 409, 410), response.text
