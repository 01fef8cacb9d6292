"""Timing and concurrency: the one piece of code that times every system.

``concurrency`` slots run in one event loop, each drawing from its own sessions,
so no session runs two turns at once. A slot stops starting cycles at the
deadline, at its share of the cycle cap, or when its sessions are used up;
cycles already started finish and count. A session serves at most
``cycles_per_session(H)`` cycles, so its history stays within ~10% of H.
"""

from __future__ import annotations

import asyncio
import heapq
import math
import time
from dataclasses import dataclass, field

from bench.workloads.base import Workload

MESSAGES_PER_CYCLE = 4


def cycles_per_session(history: int) -> int:
    """How many cycles one session may serve before its history drifts ~10%."""
    return max(1, int(0.1 * max(history, 80)) // MESSAGES_PER_CYCLE)


class SessionPool:
    """Each slot's sessions, least-used first, none used more than ``limit`` times."""

    def __init__(self, slots: int, limit: int) -> None:
        self.slots, self.limit = slots, limit
        # Per slot: a heap of (uses, arrival order, key).
        self._heaps: list[list[tuple[int, int, str]]] = [[] for _ in range(slots)]
        self._arrivals = 0
        self.max_uses = 0

    def add(self, keys: list[str]) -> None:
        """Deal ``keys`` to the slots in turn."""
        for key in keys:
            slot = self._arrivals % self.slots
            heapq.heappush(self._heaps[slot], (0, self._arrivals, key))
            self._arrivals += 1

    @property
    def size(self) -> int:
        return self._arrivals

    def remaining(self, slot: int) -> int:
        return sum(self.limit - uses for uses, _, _ in self._heaps[slot])

    def sessions_to_add(self, uses_per_slot: int) -> int:
        """How many new sessions give every slot ``uses_per_slot`` more uses."""
        short = max(max(0, uses_per_slot - self.remaining(s)) for s in range(self.slots))
        return self.slots * math.ceil(short / self.limit)

    def take(self, slot: int) -> str | None:
        heap = self._heaps[slot]
        if not heap or heap[0][0] >= self.limit:
            return None
        uses, order, key = heapq.heappop(heap)
        heapq.heappush(heap, (uses + 1, order, key))
        self.max_uses = max(self.max_uses, uses + 1)
        return key


@dataclass
class PassResult:
    cycles: int = 0
    seconds: float = 0.0
    pause_seconds: list[float] = field(default_factory=list)
    resume_seconds: list[float] = field(default_factory=list)
    # Why slots stopped: "cap", "deadline" or "sessions" (pool used up).
    stopped_by: set[str] = field(default_factory=set)

    @property
    def cycles_per_second(self) -> float:
        return self.cycles / self.seconds if self.seconds > 0 else 0.0


async def run_cycles(
    workload: Workload,
    pool: SessionPool,
    *,
    cycles_per_slot: int,
    seconds: float | None = None,
    min_cycles: int = 0,
) -> PassResult:
    """Run cycles on every slot of ``pool`` at once; time each call and the whole pass.

    The time box never cuts the pass below ``min_cycles`` started cycles, so a system
    whose cycle outlasts the box still yields a few samples.
    """
    result = PassResult()
    start = time.perf_counter()
    deadline = None if seconds is None else start + seconds
    started = 0

    async def slot_loop(slot: int) -> None:
        nonlocal started
        for _ in range(cycles_per_slot):
            late = deadline is not None and time.perf_counter() >= deadline
            if late and started >= min_cycles:
                result.stopped_by.add("deadline")
                return
            session = pool.take(slot)
            if session is None:
                result.stopped_by.add("sessions")
                return
            started += 1
            began = time.perf_counter()
            handle = await workload.pause(session)
            paused = time.perf_counter()
            await workload.resume(session, handle)
            done = time.perf_counter()
            result.pause_seconds.append(paused - began)
            result.resume_seconds.append(done - paused)
            result.cycles += 1
        result.stopped_by.add("cap")

    # TaskGroup: the first failing cycle cancels the others and surfaces its error.
    async with asyncio.TaskGroup() as group:
        for slot in range(pool.slots):
            group.create_task(slot_loop(slot))
    result.seconds = time.perf_counter() - start
    return result
