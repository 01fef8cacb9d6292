"""``docs/benchmarks.md``: generated from results.json, never edited by hand.

Per store, one table per figure: a row per (history, concurrency), a column per
system, then the ratios of symfonic to LangGraph and to the floor for that same row,
so every comparison is pair by pair (same store, history and concurrency).
"""

from __future__ import annotations

from typing import Any

from bench.report.baseline import render_baseline
from bench.report.bounds import render_bounds
from bench.report.figures import (
    FIGURES,
    STORE_TITLES,
    SYSTEM_TITLES,
    Figure,
    Results,
    markdown_table,
    ratio_text,
)
from bench.report.http import render_http
from bench.report.targets import check_targets

RATIOS = (("symfonic", "langgraph"), ("symfonic", "floor"))
# Rounds that differ by more than this (max ÷ min cycles/s) are worth a note.
SPREAD_NOTE = 1.25


def _machine(meta: dict[str, Any]) -> list[str]:
    machine, versions = meta.get("machine", {}), meta.get("versions", {})
    memory = machine.get("memory_bytes")
    rows = [
        ["date (UTC)", str(meta.get("date", "?"))],
        ["CPU", str(machine.get("cpu", "?"))],
        ["cores", str(machine.get("cores", "?"))],
        ["memory", f"{memory / (1 << 30):.1f} GiB" if memory else "?"],
        ["OS", str(machine.get("os", "?"))],
    ]
    rows += [[name, str(version)] for name, version in versions.items()]
    rows.append(["command", f"`{meta.get('command', '?')}`"])
    rows.append(["options", f"`{meta.get('options', {})}`"])
    if "total_seconds" in meta:
        rows.append(["run time", f"{meta['total_seconds']:.0f} s"])
    return ["## Machine, versions, date", "", *markdown_table(" | ", rows)]


def _figure_table(results: Results, store: str, figure: Figure) -> list[str]:
    systems = results.systems()
    ratios = [(a, b) for a, b in RATIOS if a in systems and b in systems and figure.ratio]
    columns = [SYSTEM_TITLES.get(s, s) for s in systems]
    columns += [f"{SYSTEM_TITLES[a]} ÷ {SYSTEM_TITLES[b]}" for a, b in ratios]
    header = " | ".join(["history", "conc.", *columns])
    rows = []
    for history in results.axis("history", store):
        for concurrency in results.axis("concurrency", store):
            row = [f"{history:,}", str(concurrency)]
            for system in systems:
                value = results.value(system, store, history, concurrency, figure.key)
                row.append("—" if value is None else figure.format(float(value)))
            for a, b in ratios:
                row.append(ratio_text(results.ratio(a, b, store, history, concurrency, figure.key)))
            rows.append(row)
    better = "higher" if figure.higher_is_better else "lower"
    title = f"### {figure.title} ({better} is better)" if figure.ratio else f"### {figure.title}"
    return [title, "", *markdown_table(header, rows)]


def _store_section(results: Results, store: str) -> list[str]:
    lines = [f"## {STORE_TITLES.get(store, store)}", ""]
    methods = {
        (r.get("bytes_method"), r.get("rows_method"))
        for r in results.rows
        if r["store"] == store and r.get("status") == "ok"
    }
    for bytes_method, rows_method in sorted(methods, key=str):
        lines += [f"Bytes: {bytes_method}. Rows: {rows_method}.", ""]
    for figure in FIGURES:
        lines += _figure_table(results, store, figure)
    return lines


def _targets(results: Results) -> list[str]:
    rows = [[c.target, c.measured, c.verdict] for c in check_targets(results)]
    return ["## Targets", "", *markdown_table("target | measured | verdict", rows)]


def _label(row: dict[str, Any]) -> str:
    return f"{row['system']}/{row['store']}/h{row['history']}/c{row['concurrency']}"


def _round_spread(results: Results) -> tuple[float, str] | None:
    """The largest max ÷ min of a configuration's rounds, and which configuration."""
    spreads = [
        (max(rates) / min(rates), _label(row))
        for row in results.rows
        if len(rates := row.get("rounds_cycles_per_second") or []) > 1 and min(rates) > 0
    ]
    return max(spreads) if spreads else None


def _problems(results: Results) -> list[str]:
    meta = results.meta
    lines = [f"- {note}" for note in meta.get("notes", [])]
    for system, reason in meta.get("unavailable", {}).items():
        lines.append(f"- **{system} was not measured**: it did not import ({reason}).")
    threshold = meta.get("busy_threshold", 0.15)
    busy = [r for r in results.rows if r.get("cpu_busy_before", 0) > threshold]
    if busy:
        worst = max(r["cpu_busy_before"] for r in busy)
        lines.append(
            f"- **The machine was busy with other work** before {len(busy)} of "
            f"{len(results.rows)} configurations (up to {worst:.0%} of its CPU): those "
            "figures understate every system; rerun on a quiet machine."
        )
    foreign = [
        r["bytes_details"]["wal_foreign_share"]
        for r in results.rows
        if r.get("bytes_details", {}).get("wal_foreign_share", 0) > 0.05
    ]
    if foreign:
        lines.append(
            f"- Other databases wrote to the PostgreSQL server during {len(foreign)} timed "
            f"sections (up to {max(foreign):.0%} of its WAL); pg_walinspect attribution "
            "excluded their WAL from the bytes figures, but the CPU and I/O they used still "
            "slowed every system."
        )
    spread = _round_spread(results)
    if spread is not None and spread[0] > SPREAD_NOTE:
        worst, label = spread
        lines.append(
            f"- **The machine's speed varied between rounds**: a configuration's cycles per "
            f"second differed by up to {worst:.2f}× from one round to another ({label}); "
            "each figure is its median round."
        )
    for row in results.rows:
        if row.get("status") == "error":
            lines.append(f"- {_label(row)} failed: {row.get('error')}")
        for note in row.get("notes", []):
            if "busy with other work" not in note:
                lines.append(f"- {_label(row)}: {note}")
    http = results.http or {}
    lines += [f"- HTTP step: {item}" for item in http.get("problems", []) + http.get("notes", [])]
    return ["## Problems in this run", "", *lines, ""] if lines else []


def _rounds(results: Results) -> str:
    rounds = results.meta.get("options", {}).get("rounds", 1)
    return "once" if rounds == 1 else f"{rounds} times"


def render(results: Results) -> str:
    lines = [
        "# Benchmarks: symfonic, LangGraph and the floor",
        "",
        "Generated by `python -m bench` (see `bench/README.md` for the workload and how each",
        "figure is measured); rerun the command rather than editing this file.",
        "",
        "One cycle: a turn whose scripted, zero-cost model calls a tool that needs approval,",
        "pauses; it is resumed with an approval, the tool runs and the model answers. Each",
        "session already holds the given number of messages of history (~200 B each).",
        "Concurrency = sessions cycling at once in one process. The floor is the same database",
        "doing only a cycle's unavoidable commits (pause, claim, publish) on the raw driver.",
        "Ratios are symfonic's figure divided by the other system's, in the same row.",
        f"The whole matrix ran {_rounds(results)}, the systems' order rotated each round;",
        "each configuration's figures are those of its median round by cycles per second.",
        "The targets compare speeds round by round: a round measures a configuration's systems",
        "back to back, and a target's ratio is the median of the rounds' ratios (each round's",
        "is listed), which can differ from the quotient of two median rounds in the tables.",
        "",
    ]
    if results.http:
        lines[-1:-1] = [
            "The HTTP section at the end resumes pauses through a real `symfonic serve` process."
        ]
    lines += _problems(results) + _targets(results) + render_baseline(results)
    lines += render_bounds(results)
    lines += _machine(results.meta)
    for store in results.axis("store"):
        lines += _store_section(results, store)
    lines += render_http(results)
    return "\n".join(lines).rstrip() + "\n"
