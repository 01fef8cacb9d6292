"""Shared by the AG-UI tests: read a stream back with the protocol's own models, and
the small service the in-process tests run against.

Every event of every stream goes through :func:`parse_stream`: it is validated with
``ag_ui.core``'s event union, must carry no field the protocol does not define, and
the stream as a whole must follow the run lifecycle (one opening event, text and
tool calls opened before use and closed before the run ends, exactly one closing
event, nothing after it). A stream that breaks any of it fails the test.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
from ag_ui.core import BaseEvent, Event, EventType, RunFinishedEvent
from fastapi import FastAPI
from pydantic import BaseModel, TypeAdapter

from symfonic.server.app import create_app
from symfonic.server.service.host import ServiceHost

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
KEYS = "alice=alice-key,bob=bob-key"
CLOSING = {EventType.RUN_FINISHED, EventType.RUN_ERROR}


def _models(value: Any) -> Iterator[BaseModel]:
    if isinstance(value, BaseModel):
        yield value
        for name in type(value).model_fields:
            yield from _models(getattr(value, name))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _models(item)


def parse_event(data: str) -> BaseEvent:
    event = EVENTS.validate_python(json.loads(data))
    for model in _models(event):
        assert not model.model_extra, f"{type(model).__name__} carries unknown {model.model_extra}"
    return event  # type: ignore[no-any-return]


def check_lifecycle(events: list[BaseEvent]) -> None:
    """The run lifecycle the reference client's verifier enforces, and then some."""
    assert events, "an empty stream"
    assert events[0].type in {EventType.RUN_STARTED, EventType.RUN_ERROR}, events[0].type
    closing = [i for i, e in enumerate(events) if e.type in CLOSING]
    assert closing == [len(events) - 1], f"closing events at {closing} of {len(events)}"
    if events[0].type is EventType.RUN_ERROR:
        assert len(events) == 1, "a refused run is one RUN_ERROR"
    texts: set[str] = set()
    calls: set[str] = set()
    for event in events[1:-1]:
        kind = event.type
        assert kind is not EventType.RUN_STARTED, "a second RUN_STARTED"
        if kind is EventType.TEXT_MESSAGE_START:
            assert event.message_id not in texts  # type: ignore[attr-defined]
            texts.add(event.message_id)  # type: ignore[attr-defined]
        elif kind is EventType.TEXT_MESSAGE_CONTENT:
            assert event.message_id in texts  # type: ignore[attr-defined]
        elif kind is EventType.TEXT_MESSAGE_END:
            texts.remove(event.message_id)  # type: ignore[attr-defined]
        elif kind is EventType.TOOL_CALL_START:
            assert not texts, "a tool call while a text message is open"
            assert event.tool_call_id not in calls  # type: ignore[attr-defined]
            calls.add(event.tool_call_id)  # type: ignore[attr-defined]
        elif kind is EventType.TOOL_CALL_ARGS:
            assert event.tool_call_id in calls  # type: ignore[attr-defined]
        elif kind is EventType.TOOL_CALL_END:
            calls.remove(event.tool_call_id)  # type: ignore[attr-defined]
        else:
            assert not texts, f"{kind} while a text message is open"
    assert not texts and not calls, "the run closed with a message or tool call open"


def parse_stream(body: str) -> list[BaseEvent]:
    """Every SSE frame's data, validated as an AG-UI event; the stream as a lifecycle."""
    events = []
    for frame in body.split("\n\n"):
        lines = [line for line in frame.splitlines() if line and not line.startswith(":")]
        if not lines:
            continue  # blank, or a keep-alive comment
        data = [line[5:].lstrip() for line in lines if line.startswith("data:")]
        assert data == [line[5:].lstrip() for line in lines], f"not an AG-UI frame: {frame!r}"
        events.append(parse_event("\n".join(data)))
    check_lifecycle(events)
    return events


def types(events: list[BaseEvent]) -> list[str]:
    return [e.type.value for e in events]


def finished(events: list[BaseEvent]) -> RunFinishedEvent:
    last = events[-1]
    assert isinstance(last, RunFinishedEvent), f"the run ended with {last.type}"
    return last


def run_body(
    thread_id: str,
    text: str | None = None,
    *,
    resume: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A ``RunAgentInput`` as a front end sends it (camelCase JSON)."""
    messages = [] if text is None else [{"id": uuid.uuid4().hex, "role": "user", "content": text}]
    body: dict[str, Any] = {
        "threadId": thread_id,
        "runId": uuid.uuid4().hex,
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        **extra,
    }
    if resume is not None:
        body["resume"] = resume
    return body


def agui_app(host: ServiceHost, keys: str = KEYS) -> FastAPI:
    """The service app (native API and AG-UI), as ``symfonic serve`` builds it."""
    return create_app(host, api_keys=keys, sweep_interval=0)


class AguiClient:
    """Posts runs in-process and returns their validated events."""

    def __init__(self, app: FastAPI, key: str = "alice-key") -> None:
        self.http = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://agui.test"
        )
        self.key = key

    async def run(self, body: dict[str, Any], *, key: str | None = None) -> list[BaseEvent]:
        response = await self.http.post(
            "/v1/agui", json=body, headers={"Authorization": f"Bearer {key or self.key}"}
        )
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/event-stream")
        return parse_stream(response.text)

    async def aclose(self) -> None:
        await self.http.aclose()


class AguiReader:
    """The AG-UI events of one open run stream, read one at a time as they arrive."""

    def __init__(self, response: httpx.Response) -> None:
        self._lines = response.aiter_lines()
        self.events: list[BaseEvent] = []

    async def next(self, wait: float = 10.0) -> BaseEvent:
        data: list[str] = []
        with anyio.fail_after(wait):
            async for line in self._lines:
                if line.startswith("data:"):
                    data.append(line[5:].lstrip())
                elif line == "" and data:
                    self.events.append(parse_event("\n".join(data)))
                    return self.events[-1]
        raise AssertionError(f"the stream ended after {types(self.events)}")

    async def until(self, kind: str, wait: float = 10.0) -> BaseEvent:
        """Every event up to the next of type ``kind``; that one."""
        with anyio.fail_after(wait):
            while (event := await self.next(wait)).type.value != kind:
                pass
        return event

    async def rest(self, wait: float = 10.0) -> list[BaseEvent]:
        """Every event to the run's closing one; the whole stream is then checked."""
        while not self.events or self.events[-1].type not in CLOSING:
            await self.next(wait)
        check_lifecycle(self.events)
        return self.events
