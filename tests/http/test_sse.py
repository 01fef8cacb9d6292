"""The SSE response of a started turn, driven directly over ASGI: frames, pings, endings."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import anyio
import pytest

from http_support import frames
from symfonic.core.contracts.errors import SessionBusy
from symfonic.core.contracts.types import Event, ResponseCompleteEvent, TurnStartedEvent
from symfonic.server.http.sse import TurnEventStream
from symfonic.turns.outcomes import PrimedTurn

pytestmark = pytest.mark.anyio

STARTED = TurnStartedEvent(session_id="s", run_id="r", agent="a", base_revision=0, resumed=False)


class Wire:
    """The ASGI side of one response: what was sent, and a client that may hang up."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.hang_up = anyio.Event()
        self.first_frame = anyio.Event()
        self.pinged = anyio.Event()

    async def receive(self) -> dict[str, Any]:
        await self.hang_up.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        body = message.get("body", b"")
        if body.startswith(b"event:"):
            self.first_frame.set()
        if body.startswith(b": ping"):
            self.pinged.set()

    @property
    def text(self) -> str:
        return b"".join(m.get("body", b"") for m in self.messages).decode()

    @property
    def ended(self) -> bool:
        return self.messages[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


async def _respond(stream: TurnEventStream, wire: Wire) -> None:
    await stream({"type": "http"}, wire.receive, wire.send)  # type: ignore[arg-type]


async def test_refusal_raises_from_start_and_closes_the_stream() -> None:
    closed = anyio.Event()

    async def refused() -> AsyncGenerator[Event, None]:
        try:
            raise SessionBusy("busy")
            yield STARTED
        finally:
            closed.set()

    with pytest.raises(SessionBusy):
        await PrimedTurn.start(refused())
    assert closed.is_set()


async def test_a_quiet_turn_gets_keepalive_pings_then_its_frames() -> None:
    release = anyio.Event()

    async def quiet() -> AsyncGenerator[Event, None]:
        yield STARTED
        await release.wait()
        yield ResponseCompleteEvent(answer="ok", revision=1)

    wire = Wire()
    stream = TurnEventStream(await PrimedTurn.start(quiet()), ping_interval=0.01)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_respond, stream, wire)
        await wire.pinged.wait()
        release.set()
    assert wire.messages[0]["status"] == 200
    assert (b"cache-control", b"no-cache") in wire.messages[0]["headers"]
    assert ": ping\n\n" in wire.text
    assert [(f.event, f.id) for f in frames(wire.text)] == [
        ("turn.started", "1"), ("response.complete", "2")
    ]
    assert wire.ended


async def test_a_turn_that_breaks_mid_stream_still_ends_with_an_error_frame() -> None:
    async def broken() -> AsyncGenerator[Event, None]:
        yield STARTED
        raise RuntimeError("a bug")

    wire = Wire()
    await _respond(TurnEventStream(await PrimedTurn.start(broken())), wire)
    last = frames(wire.text)[-1]
    assert (last.event, last.id, last.data["code"]) == ("error", "2", "internal")
    assert "a bug" not in wire.text
    assert wire.ended


async def test_a_client_hanging_up_closes_the_turn_at_once() -> None:
    closed = anyio.Event()

    async def endless() -> AsyncGenerator[Event, None]:
        try:
            yield STARTED
            await anyio.sleep_forever()
        finally:
            closed.set()

    wire = Wire()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_respond, TurnEventStream(await PrimedTurn.start(endless())), wire)
        await wire.first_frame.wait()
        wire.hang_up.set()
    assert closed.is_set()
    assert not wire.ended
