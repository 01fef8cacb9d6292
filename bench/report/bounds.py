"""The report's "What bounds symfonic here": the cycle each target leaves, and what is in reach.

Its tables are computed from this run's results.json:

- the per-cycle budgets at history 0: the slowest symfonic cycle that would meet
  the LangGraph target, and 50% of the floor;
- what the "gap widens" target asks of each added message of history. Between
  two histories ``a < b`` a system's cycle grows by its marginal cost, and the
  ratio at ``b`` is a mediant of the ratio at ``a`` and of the two marginal
  costs::

      (L_a + ΔL) / (S_a + ΔS)  ≥  L_a / S_a   exactly when   ΔL / ΔS  ≥  L_a / S_a

  so the gap widens exactly when LangGraph's marginal cost is at least the ratio
  at ``a`` times symfonic's.

One sentence is not: ``REACH``, how much of the floor any runtime on
langchain-core can reach, is the recorded verdict of a system since deleted,
which holds for as long as langchain-core's model calls cost what they did.

Where inside the process a cycle's time goes is not something a run sees;
``bench/README.md`` says how to profile a configuration for that.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from bench.report.figures import STORE_TITLES, Results, markdown_table, ratio_text
from bench.report.targets import FLOOR_SHARE, SPEEDUP_AT_ZERO


def _ms_per_cycle(results: Results, system: str, store: str, history: int, c: int) -> float | None:
    """1000 ÷ cycles/s: a cycle's share of the wall time, all slots together."""
    rate = results.value(system, store, history, c, "cycles_per_second")
    return 1000 / rate if rate else None


def _text(value: float | None, form: str) -> str:
    return "—" if value is None else format(value, form)


def _budget_row(results: Results, store: str, c: int) -> list[str]:
    """At history 0: each system's cycle, and the slowest symfonic cycle each target allows."""
    ours, langgraph, floor = (
        _ms_per_cycle(results, system, store, 0, c) for system in ("symfonic", "langgraph", "floor")
    )
    goal = SPEEDUP_AT_ZERO.get(store)
    for_langgraph = langgraph / goal if langgraph is not None and goal else None
    for_floor = floor / FLOOR_SHARE if floor is not None else None
    needed = min((b for b in (for_langgraph, for_floor) if b is not None), default=None)
    over = "—"
    if ours is not None and needed is not None:
        over = "within" if ours <= needed else f"{ours / needed:.2f}×"
    cpu = results.value("symfonic", store, 0, c, "cpu_ms_per_cycle")
    budgets = (ours, cpu, langgraph, floor, for_langgraph, for_floor)
    return [STORE_TITLES.get(store, store), str(c), *(_text(v, ",.2f") for v in budgets), over]


REACH = (
    "How much of the floor is reachable at all was measured by the floor + model calls, the "
    "floor's three commits with the cycle's two langchain-core model calls in their places on "
    "a history kept in memory, a system since deleted from `bench/`: in the run of 2026-12-03 "
    "(symfonic 1f22f5b, LangGraph and the floor at SQLite synchronous=NORMAL) it reached 5–37% "
    "of the floor on SQLite, so 50% is out of reach of any runtime on langchain-core there at "
    "every history, and 13–72% on PostgreSQL, below 50% at 1,000 messages with 16 clients and "
    "at 10,000; `git worktree add /tmp/lab 58739d1 && cd /tmp/lab && PYTHONPATH=src python -m "
    "bench --systems symfonic,floor,floor+model --sqlite-synchronous NORMAL --no-http` "
    "measures it again."
)


@dataclass(frozen=True)
class Step:
    """One step of history, ``low`` to ``high`` messages, at one store and concurrency."""

    store: str
    concurrency: int
    low: int
    high: int
    # Microseconds a cycle gains per added message, each system's.
    symfonic: float
    langgraph: float
    # symfonic ÷ LangGraph in cycles per second at ``low``.
    ratio_at_low: float

    @property
    def symfonic_allowed(self) -> float:
        """The most a message may cost symfonic for the ratio not to fall over this step."""
        return self.langgraph / self.ratio_at_low

    @property
    def widens(self) -> bool:
        return self.symfonic <= self.symfonic_allowed

    def cells(self) -> list[str]:
        per_message = None if self.symfonic <= 0 else self.langgraph / self.symfonic
        return [
            STORE_TITLES.get(self.store, self.store),
            str(self.concurrency),
            f"{self.low:,} → {self.high:,}",
            f"{self.symfonic:,.1f}",
            f"{self.langgraph:,.1f}",
            ratio_text(per_message),
            ratio_text(self.ratio_at_low),
            f"{self.symfonic_allowed:,.1f}",
            "yes" if self.widens else "**no**",
        ]


def _cycle_ms(
    results: Results, system: str, store: str, c: int, histories: tuple[int, int]
) -> tuple[float, float] | None:
    """A system's milliseconds per cycle at both histories, if it was measured at both."""
    low, high = (_ms_per_cycle(results, system, store, h, c) for h in histories)
    return None if low is None or high is None else (low, high)


def steps(results: Results) -> list[Step]:
    found: list[Step] = []
    for store in results.axis("store"):
        for c in results.axis("concurrency", store):
            for low, high in itertools.pairwise(results.axis("history", store)):
                ours = _cycle_ms(results, "symfonic", store, c, (low, high))
                theirs = _cycle_ms(results, "langgraph", store, c, (low, high))
                if ours is None or theirs is None:
                    continue
                added = (high - low) / 1000  # thousands of messages: ms → µs a message
                symfonic, langgraph = (ours[1] - ours[0]) / added, (theirs[1] - theirs[0]) / added
                found.append(Step(store, c, low, high, symfonic, langgraph, theirs[0] / ours[0]))
    return found


def render_marginal(results: Results) -> list[str]:
    found = steps(results)
    if not found:
        return []
    header = (
        "store | conc. | history | symfonic, µs a message | LangGraph, µs a message | "
        "LangGraph ÷ symfonic, per message | ratio at the lower history | "
        "most symfonic may spend a message | gap widens"
    )
    return [
        "What the widening asks, step by step: the cycle time each added message of history "
        "costs (the difference of 1000 ÷ cycles/s between two histories, each system's median "
        "round, per message). The ratio rises over a step exactly when LangGraph's cost per "
        "message is at least the ratio at the lower history times symfonic's "
        "(`bench/report/bounds.py`). The targets judge the widening on the median of the "
        "rounds' ratios, this table on the median rounds, so a step within a few percent of "
        "the line can read differently in the two.",
        "",
        *markdown_table(header, [step.cells() for step in found]),
    ]


def render_bounds(results: Results) -> list[str]:
    goals = "/".join(f"{v:.0f}" for v in SPEEDUP_AT_ZERO.values())
    header = (
        "store | conc. | symfonic | its CPU | LangGraph | floor | needed for the LangGraph "
        "target | needed for 50% of the floor | symfonic over the tighter"
    )
    budgets = [
        _budget_row(results, store, c)
        for store in results.axis("store")
        if 0 in results.axis("history", store)
        for c in results.axis("concurrency", store)
    ]
    return [
        "## What bounds symfonic here",
        "",
        "Milliseconds per cycle at history 0 (1000 ÷ cycles/s, all slots together), and the "
        f"slowest symfonic cycle that would meet each target (LangGraph's ÷ {goals}, the "
        f"floor's ÷ {FLOOR_SHARE}):",
        "",
        *markdown_table(header, budgets),
        REACH,
        "",
        *render_marginal(results),
        "",
    ]
