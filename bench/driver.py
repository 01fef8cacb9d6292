"""Timing and concurrency: the one piece of code that times every system.

``concurrency`` slots run in one event loop; each slot loops over its own ring of
sessions, so no session ever runs two turns at once (that would be a conflict,
not a load). A slot stops starting cycles at the deadline or at its share of the
cycle cap, whichever comes first; cycles already started always finish and count.

History is kept near its nominal size H: every cycle adds four messages to its
session, so each session serves at most ``cycles_per_session(H)`` cycles, letting
history drift by at most ~10% (or by 8 messages at H = 0). The ring is sized for
that before timing starts, in :func:`sessions_per_slot`.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field

from bench.workloads.base import Workload

MESSAGES_PER_CYCLE = 4


def cycles_per_session(history: int) -> int:
    """How many cycles one session may serve before its history drifts ~10%."""
    return max(1, int(0.1 * max(history, 80)) // MESSAGES_PER_CYCLE)


def sessions_per_slot(history: int, cycles_per_slot: int) -> int:
    return max(1, math.ceil(cycles_per_slot / cycles_per_session(history)))


class SessionRing:
    """Round-robin over each slot's own sessions, so usage stays even within a slot."""

    def __init__(self, keys: list[str], slots: int) -> None:
        if len(keys) < slots:
            raise ValueError(f"{len(keys)} sessions cannot feed {slots} slots")
        self._rings = [keys[slot::slots] for slot in range(slots)]
        self._next = [0] * slots
        self.max_uses = 0

    def take(self, slot: int) -> str:
        ring = self._rings[slot]
        index = self._next[slot]
        self._next[slot] += 1
        self.max_uses = max(self.max_uses, index // len(ring) + 1)
        return ring[index % len(ring)]


@dataclass
class PassResult:
    cycles: int = 0
    seconds: float = 0.0
    pause_seconds: list[float] = field(default_factory=list)
    resume_seconds: list[float] = field(default_factory=list)

    @property
    def cycles_per_second(self) -> float:
        return self.cycles / self.seconds if self.seconds > 0 else 0.0


async def run_cycles(
    workload: Workload,
    ring: SessionRing,
    *,
    slots: int,
    cycles_per_slot: int,
    seconds: float | None = None,
) -> PassResult:
    """Run cycles on ``slots`` concurrent slots; time each call and the whole pass."""
    result = PassResult()
    start = time.perf_counter()
    deadline = None if seconds is None else start + seconds

    async def slot_loop(slot: int) -> None:
        for _ in range(cycles_per_slot):
            if deadline is not None and time.perf_counter() >= deadline:
                return
            session = ring.take(slot)
            began = time.perf_counter()
            handle = await workload.pause(session)
            paused = time.perf_counter()
            await workload.resume(session, handle)
            done = time.perf_counter()
            result.pause_seconds.append(paused - began)
            result.resume_seconds.append(done - paused)
            result.cycles += 1

    # TaskGroup: the first failing cycle cancels the others and surfaces its error.
    async with asyncio.TaskGroup() as group:
        for slot in range(slots):
            group.create_task(slot_loop(slot))
    result.seconds = time.perf_counter() - start
    return result
