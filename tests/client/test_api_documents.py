"""The committed API documents are the app's: ``docs/openapi.json``, the TypeScript types
generated from it, and the client's models all say what the service serves.

A route, a field or a description changed in the app and not regenerated fails
here, with the command that regenerates both files. The TypeScript half runs
``openapi-typescript`` at the version ``clients/typescript/package-lock.json``
pins, so it needs Node and ``npm ci`` there; without them it is skipped and
says so, unless ``SYMFONIC_REQUIRE_NODE=1`` (CI), which makes it a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

import pytest
from pydantic import BaseModel
from tools.openapi import (
    GENERATOR,
    OPENAPI,
    REGENERATE,
    TYPES,
    TYPESCRIPT,
    document,
    generated_types,
    rendered,
)

from symfonic.client import events, models

REQUIRE_NODE = os.environ.get("SYMFONIC_REQUIRE_NODE") == "1"


@pytest.fixture(scope="module")
def current() -> dict[str, Any]:
    return document()


def test_the_committed_openapi_document_is_the_apps(current: dict[str, Any]) -> None:
    committed = OPENAPI.read_text()
    assert committed == rendered(current), (
        f"docs/openapi.json differs from the app's schema; regenerate it: {REGENERATE}"
    )


def needs_node() -> None:
    """Skip (or, with ``SYMFONIC_REQUIRE_NODE=1``, fail) without Node and ``npm ci``."""
    missing = (
        "Node is not installed"
        if shutil.which("node") is None
        else "openapi-typescript is not installed (run `npm ci` in clients/typescript)"
        if not GENERATOR.exists()
        else None
    )
    if missing is None:
        return
    if REQUIRE_NODE:
        pytest.fail(f"SYMFONIC_REQUIRE_NODE=1 but {missing}")
    pytest.skip(f"{missing}: the TypeScript files are not checked")


def test_the_committed_typescript_types_are_generated_from_it() -> None:
    needs_node()
    assert TYPES.read_text() == generated_types(OPENAPI), (
        f"clients/typescript/symfonic-api.d.ts differs from docs/openapi.json; "
        f"regenerate it: {REGENERATE}"
    )


def test_the_typescript_example_type_checks_against_the_types() -> None:
    needs_node()
    checked = subprocess.run(
        [str(TYPESCRIPT / "node_modules" / ".bin" / "tsc"), "-p", str(TYPESCRIPT)],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


# The client's model for each response schema the document names.
MIRRORS: dict[str, type[BaseModel]] = {
    "SessionCreated": models.SessionCreated,
    "SessionView": models.Session,
    "MessageView": models.Message,
    "ToolCallView": models.ToolCall,
    "PauseView": models.Pause,
    "PauseList": models.PausePage,
    "DeliveryView": models.Delivery,
    "DeliveryList": models.DeliveryList,
    "DestinationView": models.Destination,
    "DestinationList": models.DestinationList,
    "Health": models.Health,
    "RunStarted": models.RunStarted,
    "RunView": models.Run,
    "RunOutcome": models.RunOutcome,
    "ErrorDetail": models.ErrorDetail,
    "PauseSnapshot": events.PauseSnapshot,
    "PauseChangeEvent": events.PauseChange,
}
# What the client adds to a feed frame's data: the frame's event name and id.
FRAME_FIELDS = {"type", "position"}
FRAMES = {"PauseSnapshot", "PauseChangeEvent"}


@pytest.mark.parametrize("schema", sorted(MIRRORS))
def test_each_client_model_has_the_fields_of_the_response_it_reads(
    schema: str, current: dict[str, Any]
) -> None:
    served = current["components"]["schemas"][schema]
    own = FRAME_FIELDS if schema in FRAMES else set()
    model = MIRRORS[schema].model_fields
    assert set(model) - own == set(served["properties"]), list(served["properties"])
    required = {name for name, field in model.items() if field.is_required()} - own
    assert required <= set(served.get("required", ())), f"{schema}: the client requires more"
