"""The report's "What bounds symfonic here": each missed target, by how much, and why.

Every sentence is computed from this run's results.json: the margins, the
per-cycle budgets, the share of the floor a runtime can reach, the HTTP server's
cores. Where inside the process a cycle's time goes is not something a run
sees; ``bench/README.md`` says how to profile a configuration for that.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.report.ceiling import render_ceiling
from bench.report.figures import STORE_TITLES, Results, markdown_table
from bench.report.http import server_cores
from bench.report.marginal import render_marginal
from bench.report.targets import FLOOR_SHARE, SPEEDUP_AT_ZERO, check_targets

# Stores whose commits are a server's work, which the benchmark process waits for.
SERVER_STORES = frozenset({"postgresql"})


@dataclass(frozen=True)
class Budget:
    """History 0, one store and concurrency: ms per cycle of throughput (1000 ÷ cycles/s)."""

    symfonic: float | None
    cpu: float | None  # symfonic's CPU per cycle in its own process, all threads
    langgraph: float | None
    floor: float | None
    goal: float | None  # the speed-up over LangGraph the targets ask for

    @property
    def for_langgraph(self) -> float | None:
        """The slowest symfonic cycle that meets the LangGraph target."""
        return None if self.langgraph is None or not self.goal else self.langgraph / self.goal

    @property
    def for_floor(self) -> float | None:
        """The slowest symfonic cycle that is still 50% of the floor's speed."""
        return None if self.floor is None else self.floor / FLOOR_SHARE

    @property
    def needed(self) -> float | None:
        known = [b for b in (self.for_langgraph, self.for_floor) if b is not None]
        return min(known) if known else None


def budget(results: Results, store: str, concurrency: int) -> Budget:
    def ms(system: str) -> float | None:
        rate = results.value(system, store, 0, concurrency, "cycles_per_second")
        return 1000 / rate if rate else None

    cpu = results.value("symfonic", store, 0, concurrency, "cpu_ms_per_cycle")
    return Budget(ms("symfonic"), cpu, ms("langgraph"), ms("floor"), SPEEDUP_AT_ZERO.get(store))


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.2f}"


def _budget_table(results: Results) -> list[str]:
    header = [
        "store",
        "conc.",
        "symfonic",
        "its CPU",
        "LangGraph",
        "floor",
        "needed for the LangGraph target",
        "needed for 50% of the floor",
        "symfonic over the tighter",
    ]
    rows = []
    for store in results.axis("store"):
        if 0 not in results.axis("history", store):
            continue
        for c in results.axis("concurrency", store):
            b = budget(results, store, c)
            over = "—"
            if b.symfonic is not None and b.needed is not None:
                over = "within" if b.symfonic <= b.needed else f"{b.symfonic / b.needed:.2f}×"
            cells = [STORE_TITLES.get(store, store), str(c), _ms(b.symfonic), _ms(b.cpu)]
            cells += [_ms(b.langgraph), _ms(b.floor), _ms(b.for_langgraph), _ms(b.for_floor)]
            rows.append([*cells, over])
    return markdown_table(header, rows)


def _measured(results: Results, store: str) -> str:
    """What this run itself says about the bound, at concurrency 1."""
    b = budget(results, store, 1)
    if b.symfonic is None:
        return "not measured at history 0, concurrency 1 in this run."
    text = f"this run, history 0, concurrency 1: {b.symfonic:.2f} ms per cycle"
    if b.cpu is not None:
        text += f", {b.cpu:.2f} ms of it CPU in the benchmark process ({b.cpu / b.symfonic:.0%})"
    if b.floor is not None:
        text += f"; the floor's commits take {b.floor:.2f} ms"
    if b.for_langgraph is not None and b.floor is not None and b.for_langgraph < b.floor:
        text += (
            f". The LangGraph target asks for {b.for_langgraph:.2f} ms, less than the floor "
            "itself: no system making these commits reaches it on this machine"
        )
    elif store in SERVER_STORES and b.for_langgraph is not None and b.floor is not None:
        text += (
            f". One cycle waits for its commits and computes in turn: the LangGraph target "
            f"({b.for_langgraph:.2f} ms) leaves {b.for_langgraph - b.floor:.2f} ms beside the "
            f"floor's {b.floor:.2f} ms of commits (their own client CPU included)"
        )
        if b.cpu is not None:
            text += f", for symfonic's {b.cpu:.2f} ms of CPU"
    return text + "."


def _http(results: Results, store: str) -> str | None:
    rows = [r for r in (results.http or {}).get("results", []) if r["store"] == store]
    if not rows:
        return None
    top = max(rows, key=lambda r: int(r["clients"]))
    cores, rate = server_cores(top), top.get("resumes_per_s")
    if cores is None or not rate or top.get("p50_ms") is None:
        return None
    return (
        f"HTTP, {top['clients']} clients: the one uvicorn process kept {cores:.2f} cores busy "
        f"({top['server_cpu_ms_per_resume']:.2f} ms CPU per resume) for {rate:,.0f} resumes/s; "
        f"latency is queueing behind it (clients ÷ rate = {1000 * top['clients'] / rate:,.0f} "
        f"ms, p50 {top['p50_ms']:,.0f} ms)."
    )


def render_bounds(results: Results) -> list[str]:
    lines = ["## What bounds symfonic here", ""]
    missed = [c for c in check_targets(results) if c.met is False]
    lines += [f"- {c.verdict}: {c.target}: {c.measured}." for c in missed] or [
        "No target is missed in this run."
    ]
    goals = "/".join(f"{v:.0f}" for v in SPEEDUP_AT_ZERO.values())
    lines += [
        "",
        "Milliseconds per cycle at history 0 (1000 ÷ cycles/s, all slots together), and the "
        f"slowest symfonic cycle that would meet each target (LangGraph's ÷ {goals}, the "
        f"floor's ÷ {FLOOR_SHARE}):",
        "",
        *_budget_table(results),
        *render_ceiling(results, FLOOR_SHARE),
    ]
    for store in results.axis("store"):
        lines.append(f"**{STORE_TITLES.get(store, store)}**, {_measured(results, store)}")
        lines.append("")
        http = _http(results, store)
        lines += [f"- {http}", ""] if http else []
    lines += render_marginal(results)
    return [*lines, ""]
