"""The OpenAPI document's stream parts: each SSE event's name and data schema, which FastAPI
cannot infer from a prepared response.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from symfonic.core.contracts.types import STREAM_EVENTS, TurnPausedEvent
from symfonic.core.contracts.wire import RunStarted
from symfonic.server.http.feed_schemas import PauseChangeEvent, PauseSnapshot
from symfonic.server.http.schemas import TurnOutcome
from symfonic.server.transport.errors import documented

REF = "#/components/schemas/{model}"
# The live pause feed's frame data (its stream is documented by its route).
FEED_FRAMES: tuple[type[BaseModel], ...] = (PauseSnapshot, PauseChangeEvent)


def _frame(event: type) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["event", "data", "id"],
        "properties": {
            "event": {"const": event.type},  # type: ignore[attr-defined]
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": {"$ref": REF.format(model=event.__name__)},
            },
            "id": {"type": "string", "description": "The frame's sequence number, from 1."},
        },
    }


def turn_responses(description: str) -> dict[int | str, dict[str, Any]]:
    """The 200 of a turn or resume: the event stream, or the JSON outcome."""
    return {
        200: {
            "model": TurnOutcome,
            "description": description,
            "content": {
                "text/event-stream": {
                    "itemSchema": {"oneOf": [_frame(event) for event in STREAM_EVENTS]},
                }
            },
        }
    }


def run_started_response() -> dict[int | str, dict[str, Any]]:
    """The 202 of a turn sent with ``"background": true``, or queued with ``enqueue``."""
    return {
        202: {
            "model": RunStarted,
            "description": 'With `"background": true`: the run\'s id and events URL; it runs '
            'on whether or not anyone listens. With `"on_busy": "enqueue"`, always: the run '
            "the message will be, `queued` at `GET /v1/runs/{run_id}` until the turns "
            "before it on the session have ended.",
        }
    }


def resume_accepted_response() -> dict[int | str, dict[str, Any]]:
    """The 202s of a resume: a run started in the background, or an approval counted."""
    return {
        202: {
            "model": RunStarted | TurnOutcome,
            "description": 'With `"background": true`: the run\'s id and events URL '
            "(`RunStarted`); the claim was won and the turn runs on whether or not anyone "
            "listens. Or an approval of a pause that needs several approvers "
            "(`approvals_required`), counted while more are needed (`TurnOutcome`): nothing "
            "ran, the pause stays pending with its token, and `pause.approvals` says who "
            "approved so far. The same principal approving again gets the same 202 with the "
            "vote as it stands, counted once; an edit is a new proposal that only its "
            "editor has approved. Always JSON, even to a request for a stream. The approval "
            "that completes the quorum runs the turn on, as a 200 (or a background run).",
        }
    }


def run_events_response(description: str) -> dict[int | str, dict[str, Any]]:
    """The 200 of a run's events: the same frames as a turn's stream, numbered in the run."""
    return {
        200: {
            "description": description,
            "content": {
                "text/event-stream": {
                    "itemSchema": {"oneOf": [_frame(event) for event in STREAM_EVENTS]},
                }
            },
        }
    }


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def require_discriminators(document: dict[str, Any]) -> None:
    """Make every member of a discriminated union require the property that tags it."""
    components = document.get("components", {}).get("schemas", {})
    for node in list(_walk(document)):
        discriminator = node.get("discriminator")
        if not isinstance(discriminator, dict):
            continue
        tag = discriminator["propertyName"]
        for ref in discriminator.get("mapping", {}).values():
            member = components.get(ref.removeprefix(REF.format(model="")))
            if member is not None and tag not in member.setdefault("required", []):
                member["required"].append(tag)


def _braked_where_authenticated(document: dict[str, Any]) -> None:
    """Every operation that takes a key may answer 429: the key brake stands before it."""
    braked = documented(429)[429]
    entry = {
        "description": braked["description"],
        "headers": braked["headers"],
        "content": {"application/json": {"schema": {"$ref": REF.format(model="ErrorResponse")}}},
    }
    for item in document.get("paths", {}).values():
        for operation in item.values():
            responses = operation.get("responses", {})
            if "401" in responses:
                responses.setdefault("429", entry)


def _token_on_the_wire(components: dict[str, Any]) -> None:
    """``turn.paused`` carries ``token`` (the name the rest of the API uses) beside the
    deprecated ``pause_token``, as `symfonic.server.http.sse.wire_data` sends it."""
    paused = components.get(TurnPausedEvent.__name__)
    if paused is None:
        return
    properties = paused.setdefault("properties", {})
    properties["token"] = {
        "type": "string",
        "title": "Token",
        "description": "The pause token: `POST /v1/resume` takes it as `token`.",
    }
    properties.get("pause_token", {}).update(
        {
            "deprecated": True,
            "description": "Deprecated: the same value as `token`, kept until 0.2.0.",
        }
    )
    paused["required"] = sorted({*paused.get("required", ()), "token"})


def install(app: FastAPI) -> None:
    """Generate the document once, with every stream event's schema in its components."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        _, events = models_json_schema(
            [(model, "serialization") for model in (*STREAM_EVENTS, *FEED_FRAMES)],
            ref_template=REF,
        )
        components = document.setdefault("components", {}).setdefault("schemas", {})
        for name, schema in events.get("$defs", {}).items():
            components.setdefault(name, schema)
        _token_on_the_wire(components)
        require_discriminators(document)
        _braked_where_authenticated(document)
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]
