"""A benchmark run's rows as the report reads them, written out by the tests that check it."""

from __future__ import annotations

from typing import Any


def measured_row(
    system: str, rate: float, *, history: int = 0, concurrency: int = 1, **extra: Any
) -> dict[str, Any]:
    """One configuration where ``system`` ran at ``rate`` cycles a second on SQLite."""
    return {
        "system": system,
        "store": "sqlite",
        "history": history,
        "concurrency": concurrency,
        "status": "ok",
        "cycles_per_second": rate,
        **extra,
    }
