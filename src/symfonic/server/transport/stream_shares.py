"""Fair shares of long-lived streams in this process: a cap per principal, refused before
anything starts, and the oldest idle stream of the heaviest principal closed when connections
run out.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from symfonic.core.contracts.errors import TooManyStreams
from symfonic.core.contracts.principal import Principal

CONNECTION_EXTENSION = "symfonic.connection"
DEFAULT_MAX_STREAMS_PER_PRINCIPAL = 16
# Seconds a refused client waits: a stream usually ends when its turn does, in seconds.
STREAM_RETRY_AFTER = 5


class StreamConnection(Protocol):
    """What a stream may do to the connection it is sent on: close it."""

    def close(self) -> None: ...


@dataclass(eq=False)
class StreamSlot:
    """One open stream's place in its principal's share; released exactly once."""

    principal: str
    idle: bool
    connection: StreamConnection | None
    resumable: bool = field(default=False, kw_only=True)
    shares: StreamShares = field(repr=False)
    opened: float = field(default_factory=time.monotonic)

    def release(self) -> None:
        self.shares.release(self)

    def displace(self) -> None:
        """Give the slot up and close the connection under it (the stream then ends)."""
        self.release()
        if self.connection is not None:
            self.connection.close()


class StreamShares:
    """The open streams of every principal, in one process (see the module)."""

    def __init__(self, per_principal: int = DEFAULT_MAX_STREAMS_PER_PRINCIPAL) -> None:
        if per_principal < 1:
            raise ValueError("a principal must be allowed at least one stream")
        self.per_principal = per_principal
        self._open: dict[str, list[StreamSlot]] = {}

    def __repr__(self) -> str:
        return f"StreamShares(per_principal={self.per_principal}, open={self.open_count})"

    @property
    def open_count(self) -> int:
        return sum(len(slots) for slots in self._open.values())

    def acquire(
        self, principal: Principal, scope: Mapping[str, Any], *, idle: bool, resumable: bool = False
    ) -> StreamSlot:
        """A slot for one more stream of ``principal``, or `TooManyStreams`. ``resumable``:
        its client reconnects where it left off (``Last-Event-ID``), to any worker."""
        slots = self._open.setdefault(principal.name, [])
        if len(slots) >= self.per_principal:
            raise TooManyStreams(
                f"{principal.name!r} already has {len(slots)} open streams, the most one "
                f"principal may hold; close one (or wait for a turn to end) and try again",
                retry_after=STREAM_RETRY_AFTER,
            )
        extensions = scope.get("extensions") or {}
        connection = extensions.get(CONNECTION_EXTENSION)
        slot = StreamSlot(principal.name, idle, connection, self, resumable=resumable)
        slots.append(slot)
        return slot

    def release(self, slot: StreamSlot) -> None:
        slots = self._open.get(slot.principal)
        if slots is None or slot not in slots:
            return
        slots.remove(slot)
        if not slots:
            del self._open[slot.principal]

    def close_for_stop(self) -> int:
        """Close every idle or resumable stream (a feed, a run's follower): its client
        reconnects, to another worker once this one stops; how many."""
        closing = [
            slot
            for slots in self._open.values()
            for slot in slots
            if (slot.idle or slot.resumable) and slot.connection is not None
        ]
        for slot in closing:
            slot.displace()
        return len(closing)

    def heaviest(self) -> tuple[int, StreamSlot | None]:
        """How many streams the heaviest holder of an idle stream holds, and its oldest idle one.

        Only principals with an idle stream on a known connection are weighed:
        one whose every stream is working has nothing that can give way.
        """
        best: tuple[int, StreamSlot | None] = (0, None)
        for slots in self._open.values():
            idle = [s for s in slots if s.idle and s.connection is not None]
            if idle and len(slots) > best[0]:
                best = (len(slots), min(idle, key=lambda s: s.opened))
        return best
