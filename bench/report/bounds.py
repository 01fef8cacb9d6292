"""The report's "What bounds symfonic here": each missed target, by how much, and why.

Margins and per-cycle budgets come from this run's results.json. What a run cannot
see -- where inside the process a cycle's time goes -- comes from a profile
(cProfile / pyinstrument on the development machine; the commands are in
``bench/README.md``), labelled as such so a reader can tell measured from profiled.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.report.figures import STORE_TITLES, Results
from bench.report.http import server_cores
from bench.report.targets import FLOOR_SHARE, SPEEDUP_AT_ZERO, check_targets

PROFILE_NOTE = (
    "The bullets marked *profile* come from cProfile and pyinstrument on the development "
    "machine at history 0, concurrency 1, not from this run; `bench/README.md` says how to "
    "profile again."
)

PROFILES = {
    "sqlite": (
        "*profile*: the storage redesign (each port method one unit of work on a sync "
        "SQLAlchemy connection on a worker thread) cut a cycle's thread hand-offs from ≈105 "
        "(aiosqlite) to 11, one per transaction: ≈14.7 → ≈5 ms per cycle, 68 → ≈198 cycles/s "
        "including session creation.",
        "*profile*: ≈2.4 ms of the ≈5 ms is inside SQLAlchemy + SQLite transactions, "
        "≈0.13–0.6 ms each, where raw `sqlite3` runs the same statements in ≈0.02 ms: "
        "**SQLAlchemy Core's per-execution overhead is the bound**, not SQLite.",
        "*profile*: the other ≈2.4 ms is agent-side CPU, spread thinly: langchain message "
        "objects, two streamed model calls through `BaseChatModel.astream` with callbacks, "
        "pydantic events.",
    ),
    "postgresql": (
        "*profile*: **CPU-bound in the client**, ≈8–9 ms of CPU per cycle through "
        "SQLAlchemy's asyncpg greenlet bridge.",
        "*profile*: ≈37 round trips per cycle, ≈11 of them `pool_pre_ping`. "
        "`SYMFONIC_POOL_PRE_PING=0` measured 87 → 120 cycles/s (+38%); it stays on by default "
        "because it lets a worker survive a server restart without failing a turn.",
    ),
}

# The profiled cycle (history 0, concurrency 1), ms: a run far from it profiles another build.
PROFILED_MS = {"sqlite": 5.0, "postgresql": 1000 / 87}
STALE_FACTOR = 1.5

REMEDIES = (
    "A raw-driver statement layer (`sqlite3` / asyncpg with prepared statements) behind the "
    "same storage port instead of SQLAlchemy Core on the hot path: SQLite's ≈2.2 ms per "
    "cycle of overhead, PostgreSQL's greenlet-bridge CPU.",
    "Fewer round trips per turn, a turn's start checks merged into one statement: "
    "PostgreSQL's ≈37 per cycle.",
    "A lighter kernel event path: the ≈2.4 ms of agent-side CPU.",
)


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
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
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
            lines.append("| " + " | ".join([*cells, over]) + " |")
    return [*lines, ""]


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
    profiled = PROFILED_MS.get(store)
    if profiled and not 1 / STALE_FACTOR <= b.symfonic / profiled <= STALE_FACTOR:
        text += (
            f". **The profile below is stale for this build**: it had ≈{profiled:.1f} ms per "
            f"cycle, this run {b.symfonic / profiled:.1f}× that; profile again"
        )
    if b.for_langgraph is not None and b.floor is not None and b.for_langgraph < b.floor:
        text += (
            f". The LangGraph target asks for {b.for_langgraph:.2f} ms, less than the floor "
            "itself: no system making these commits reaches it on this machine"
        )
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
    lines += [f"- **missed**: {c.target}: {c.measured}." for c in missed] or [
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
        PROFILE_NOTE,
        "",
    ]
    for store in results.axis("store"):
        lines.append(f"**{STORE_TITLES.get(store, store)}**, {_measured(results, store)}")
        lines.append("")
        bullets = [*PROFILES.get(store, ()), _http(results, store)]
        lines += [f"- {bullet}" for bullet in bullets if bullet]
        lines.append("")
    lines += ["What would close the gap:", ""]
    lines += [f"{i}. {remedy}" for i, remedy in enumerate(REMEDIES, start=1)]
    return [*lines, ""]
