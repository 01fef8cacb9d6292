"""Following ``GET /v1/pauses/events`` from a test: a reader of frames as they arrive."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx

from http_support import Frame

FEED = "/v1/pauses/events"


class FeedReader:
    """The frames of one open feed, read one at a time, keep-alive comments skipped."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.aiter_lines()
        self.comments: list[str] = []

    async def next(self, wait: float = 3.0) -> Frame:
        fields: dict[str, list[str]] = {}
        with anyio.fail_after(wait):
            async for line in self._lines:
                if line.startswith(":"):
                    self.comments.append(line)
                    continue
                if line == "":
                    if "event" in fields:
                        data = json.loads("\n".join(fields["data"]))
                        return Frame(fields["event"][0], data, fields["id"][0])
                    continue
                name, _, value = line.partition(": ")
                fields.setdefault(name, []).append(value)
        raise AssertionError("the feed ended")

    async def until(self, event: str, pause_id: str | None = None, wait: float = 3.0) -> Frame:
        """The next frame of this type (about this pause), skipping others."""
        with anyio.fail_after(wait):
            while True:
                frame = await self.next(wait)
                if frame.event == event and (
                    pause_id is None or frame.data.get("pause_id") == pause_id
                ):
                    return frame

    async def quiet(self, seconds: float) -> list[Frame]:
        """Every frame that arrives within ``seconds``."""
        seen: list[Frame] = []
        with anyio.move_on_after(seconds):
            while True:
                seen.append(await self.next(seconds + 1))
        return seen


@asynccontextmanager
async def following(
    client: httpx.AsyncClient, headers: dict[str, str] | None = None, **extra: str
) -> AsyncIterator[FeedReader]:
    async with client.stream("GET", FEED, headers={**(headers or {}), **extra}) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        yield FeedReader(response)


def ids_of(frames: list[Frame]) -> set[Any]:
    return {f.data.get("pause_id") for f in frames} | {
        p["pause_id"] for f in frames for p in f.data.get("pauses", [])
    }
