"""Latency summaries: percentiles in milliseconds, computed the same way for every system."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) with linear interpolation between closest ranks.

    With fewer than 100 samples the p99 is close to the maximum; the sample count
    is reported beside it so a reader can tell.
    """
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    fraction = position - low
    return ordered[low] + (ordered[high] - ordered[low]) * fraction


def latency_ms(values: Sequence[float]) -> dict[str, float | None]:
    def ms(value: float | None) -> float | None:
        return None if value is None else round(value * 1000, 3)

    return {"p50_ms": ms(percentile(values, 50)), "p99_ms": ms(percentile(values, 99))}


def p50_p95_ms(seconds: Sequence[float]) -> tuple[float, float]:
    """The median and the 95th percentile (nearest rank), in milliseconds."""
    ordered = sorted(seconds)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.95)] * 1000


async def timed(step: Callable[[], Awaitable[Any]]) -> float:
    """The seconds ``step`` took."""
    started = time.perf_counter()
    await step()
    return time.perf_counter() - started
