"""Schemathesis against the OpenAPI document: no input gets a 500 or breaks the contract.

Every operation is called with generated valid and invalid requests (as principal
alice; the ``ignored_auth`` check also calls without a key) and every response
is checked against the document: status, content type, headers and body schema.
The store already holds a paused session so reads meet real rows. Bounded: a
small ``max_examples`` keeps the run near a minute on two cores.
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
from schemathesis.config import SchemathesisConfig

from http_support import KEYS, payment_agent
from symfonic.agent.fastapi.app import create_app

pytestmark = pytest.mark.slow


# The schema is loaded when the module is collected, so the app (and its store)
# must exist then; the store lives in a directory removed when the module ends.
STORE_DIR = Path(tempfile.mkdtemp(prefix="symfonic-schemathesis-"))
STORE = f"sqlite:///{STORE_DIR / 'api.db'}"
AS_ALICE = SchemathesisConfig.from_dict(
    {"auth": {"openapi": {"HTTPBearer": {"bearer": "key-alice"}}}}
)
# AG-UI (SPEC §8) is served by the same app but specified elsewhere; this covers SPEC §6.
schema = schemathesis.openapi.from_asgi(
    "/openapi.json",
    create_app(payment_agent(STORE), api_keys=KEYS, sweep_interval=0),
    config=AS_ALICE,
).exclude(path_regex="^/v1/agui")


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


@schema.parametrize()
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_every_operation_honours_its_documented_contract(case: Any) -> None:
    case.call_and_validate()
