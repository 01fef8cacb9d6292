"""The figures the report shows, how each is formatted, and lookups into results.json.

One table of names here keeps the Markdown tables and the target checks
reading the same keys with the same units.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from bench.workloads import BASELINE

STORE_TITLES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
SYSTEM_TITLES = {
    "symfonic": "symfonic",
    "symfonic+normal": "symfonic, SQLite synchronous=NORMAL",
    BASELINE: "symfonic, baseline tree",
    "langgraph": "LangGraph",
    "floor": "floor",
}


def _bytes(value: float) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size:
            return f"{value / size:,.1f} {unit}"
    return f"{value:,.0f} B"


def _number(value: float) -> str:
    if value.is_integer() or value >= 1000:
        return f"{value:,.0f}"
    return f"{value:,.1f}"


def _ms(value: float) -> str:
    return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"


@dataclass(frozen=True)
class Figure:
    key: str
    title: str
    higher_is_better: bool
    format: Callable[[float], str]
    # A ratio of sample counts means nothing; such figures get no ratio columns.
    ratio: bool = True


FIGURES = (
    Figure("cycles_per_second", "Cycles per second", True, _number),
    Figure("pause_p50_ms", "Pause latency p50, ms", False, _ms),
    Figure("pause_p99_ms", "Pause latency p99, ms", False, _ms),
    Figure("resume_p50_ms", "Resume latency p50, ms", False, _ms),
    Figure("resume_p99_ms", "Resume latency p99, ms", False, _ms),
    Figure(
        "cpu_ms_per_cycle",
        "CPU per cycle, ms: the benchmark process, all threads (a PostgreSQL server's not "
        "included)",
        False,
        _ms,
    ),
    Figure("bytes_per_cycle", "Bytes written per cycle", False, _bytes),
    Figure("rows_per_cycle", "Rows written per cycle", False, _number),
    Figure("peak_rss_bytes", "Peak memory, RSS of the configuration's process", False, _bytes),
    Figure("cycles", "Timed cycles: the samples behind each percentile", True, _number, False),
)


class Results:
    """Index over results.json's rows by (system, store, history, concurrency), plus the
    HTTP step's section."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.meta: dict[str, Any] = document.get("meta", {})
        self.rows: list[dict[str, Any]] = document.get("results", [])
        # The HTTP step's section (bench/http_step.py), absent when it did not run.
        self.http: dict[str, Any] | None = document.get("http")
        self._index = {
            (r["system"], r["store"], r["history"], r["concurrency"]): r for r in self.rows
        }

    def value(self, system: str, store: str, history: int, concurrency: int, key: str) -> Any:
        row = self._index.get((system, store, history, concurrency))
        if row is None or row.get("status") != "ok":
            return None
        return row.get(key)

    def ratio(
        self, top: str, bottom: str, store: str, history: int, concurrency: int, key: str
    ) -> float | None:
        a = self.value(top, store, history, concurrency, key)
        b = self.value(bottom, store, history, concurrency, key)
        if a is None or b is None or b == 0:
            return None
        return float(a) / float(b)

    def round_ratios(
        self, top: str, bottom: str, store: str, history: int, concurrency: int
    ) -> list[float]:
        """``top`` ÷ ``bottom`` in cycles per second, one per round that measured both.

        A round runs a configuration's systems back to back, so each of these
        compares them at one moment of a machine whose speed drifts.
        """
        rounds = [
            self.value(system, store, history, concurrency, "cycles_per_second_by_round") or {}
            for system in (top, bottom)
        ]
        return [
            rounds[0][n] / rounds[1][n]
            for n in sorted(rounds[0], key=int)
            if n in rounds[1] and rounds[1][n]
        ]

    def speedup(
        self, top: str, bottom: str, store: str, history: int, concurrency: int
    ) -> float | None:
        """The median of :meth:`round_ratios`; without rounds, the median rounds' quotient."""
        paired = self.round_ratios(top, bottom, store, history, concurrency)
        if paired:
            return statistics.median(paired)
        return self.ratio(top, bottom, store, history, concurrency, "cycles_per_second")

    def axis(self, field: str, store: str | None = None) -> list[Any]:
        values = {r[field] for r in self.rows if store is None or r["store"] == store}
        if field == "store":  # SQLite first: the embedded default
            return [s for s in STORE_TITLES if s in values] + sorted(values - set(STORE_TITLES))
        return sorted(values)

    def systems(self) -> list[str]:
        order = list(SYSTEM_TITLES)
        present = {r["system"] for r in self.rows}
        return [s for s in order if s in present] + sorted(present - set(order))


def markdown_table(header: str, rows: Iterable[list[str]]) -> list[str]:
    """A Markdown table, its header written as its row reads (``a | b``), then a blank line."""
    lines = [f"| {header} |", "|" + " --- |" * len(header.split(" | "))]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def ratio_text(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.2f}×" if value < 10 else f"{value:,.1f}×"
