"""Server-Sent Events read line by line, by the WHATWG rules, for the sync and the async client
alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Frame:
    """One event of a stream: its type, its data parsed as JSON, and its ``id:`` if any."""

    type: str
    data: Any
    id: str | None = None


class FrameReader:
    """Lines in, frames out; ``last_id`` is the last ``id:`` seen, for ``Last-Event-ID``."""

    def __init__(self) -> None:
        self.last_id: str | None = None
        self._event = "message"
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, line: str) -> Frame | None:
        """The frame ``line`` completes, if it is the blank line that ends one."""
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        return None

    def end(self) -> Frame | None:
        """The last frame, if the stream ended without its blank line."""
        return self._dispatch()

    def _dispatch(self) -> Frame | None:
        event, data, frame_id = self._event, self._data, self._id
        self._event, self._data, self._id = "message", [], None
        if frame_id is not None:
            self.last_id = frame_id
        if not data:
            return None
        return Frame(event, json.loads("\n".join(data)), frame_id)
