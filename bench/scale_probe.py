"""What a request waits while background work runs: a write, a read, and the loop's lag.

The probe runs beside the work on the same event loop, as a request would in
the same worker: every ``PERIOD`` seconds it creates a session (a write) and
reads a pause (a read), timing each, and a ticker measures how late the loop
wakes it. The worst of each is what a request would have waited.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

import anyio

from symfonic.core.contracts.store import SessionRecord, Store

PERIOD = 0.01
TICK = 0.005
T = TypeVar("T")


@dataclass
class Waits:
    """The worst waits seen, in seconds."""

    write: float = 0.0
    read: float = 0.0
    loop: float = 0.0
    writes: list[float] = field(default_factory=list)

    @property
    def worst(self) -> float:
        return max(self.write, self.read, self.loop)


async def _probe(store: Store, pause_id: str, waits: Waits) -> None:
    while True:
        started = time.perf_counter()
        session = SessionRecord(uuid.uuid4().hex, "probe", "assistant", 0, {}, datetime.now(UTC))
        await store.create_session(session)
        wrote = time.perf_counter()
        await store.get_pause(pause_id)
        read = time.perf_counter()
        waits.writes.append(wrote - started)
        waits.write = max(waits.write, wrote - started)
        waits.read = max(waits.read, read - wrote)
        await anyio.sleep(PERIOD)


async def _tick(waits: Waits) -> None:
    while True:
        started = time.perf_counter()
        await anyio.sleep(TICK)
        waits.loop = max(waits.loop, time.perf_counter() - started - TICK)


async def while_probed(store: Store, pause_id: str, work: Awaitable[T]) -> tuple[T, float, Waits]:
    """Run ``work`` with the probe beside it: its result, its seconds, the worst waits."""
    waits = Waits()
    async with anyio.create_task_group() as group:
        group.start_soon(_probe, store, pause_id, waits)
        group.start_soon(_tick, waits)
        await anyio.sleep(0.05)  # the probe is running before the work starts
        started = time.perf_counter()
        result = await work
        seconds = time.perf_counter() - started
        await anyio.sleep(0.05)
        group.cancel_scope.cancel()
    return result, seconds, waits
