"""The report's section on background runs: ``runs.json``, written by ``python -m bench.runs``.

A run of the report without that file renders nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.report.figures import markdown_table

HEADER = (
    "store | background ÷ attached, latency (range) | target | server CPU, background ÷ attached"
    " | attached turn, ms | another worker's listener p50 / p99, ms (target) | load before → after"
)


def _row(figures: dict[str, Any]) -> list[str]:
    cost, across = figures["cost"], figures["across"]
    sqlite = figures["store"] == "sqlite"
    low, high = cost["range"]
    return [
        "SQLite" if sqlite else "PostgreSQL",
        f"{cost['latency ratio']:.2f}× ({low:.2f}–{high:.2f}×)",
        "≤ 1.3×, " + ("met" if cost["latency ratio"] <= 1.3 else "**missed**"),
        f"{cost['cpu ratio']:.2f}×",
        f"{cost['last attached ms']:.1f}",
        f"{across['p50 ms']:.0f} / {across['p99 ms']:.0f}"
        + (" (25 / 100)" if sqlite else " (— / 50)"),
        f"{figures['load'][0]:.1f} → {figures['load after'][0]:.1f}",
    ]


def render_runs(path: Path) -> list[str]:
    """The section, from ``path`` if it exists."""
    if not path.exists():
        return []
    document = json.loads(path.read_text())
    return [
        "## Background runs against attached turns",
        "",
        f"`{document['command']}`, on {document['date']} (bench/runs.py; docs/runs.md says",
        "what each figure measures). The load average is the machine's, at the start and end",
        "of each store's half: above 2 the machine was shared with other work, and the ratios",
        "(each measured interleaved, in one sitting) say more than the milliseconds.",
        "",
        *markdown_table(HEADER, (_row(figures) for figures in document["stores"])),
    ]
