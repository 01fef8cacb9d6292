"""The report's "What bounds symfonic here": the cycle each target leaves, and what is in reach.

Every sentence and table is computed from this run's results.json:

- the per-cycle budgets at history 0: the slowest symfonic cycle that would meet
  the LangGraph target, and 50% of the floor;
- how much of the floor a runtime on langchain-core can reach at all: the floor
  + model calls (:mod:`bench.workloads.floor_model`) does the floor's commits
  and the two model calls every such runtime makes, nothing else, so its share
  of the floor is the most any reaches, and symfonic's distance to *it* is what
  is left to the runtime;
- what the "gap widens" target asks of each added message of history. Between
  two histories ``a < b`` a system's cycle grows by its marginal cost, and the
  ratio at ``b`` is a mediant of the ratio at ``a`` and of the two marginal
  costs::

      (L_a + ΔL) / (S_a + ΔS)  ≥  L_a / S_a   exactly when   ΔL / ΔS  ≥  L_a / S_a

  so the gap widens exactly when LangGraph's marginal cost is at least the ratio
  at ``a`` times symfonic's.

Where inside the process a cycle's time goes is not something a run sees;
``bench/README.md`` says how to profile a configuration for that.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from bench.report.figures import STORE_TITLES, Results, markdown_table, ratio_text
from bench.report.targets import BOUND, FLOOR_SHARE, SPEEDUP_AT_ZERO, bound_share


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


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def render_ceiling(results: Results, share: float) -> list[str]:
    """The table of shares of the floor, or nothing when the bound was not measured."""
    if BOUND not in results.systems():
        return []
    rows = []
    for store in results.axis("store"):
        for h in results.axis("history", store):
            for c in results.axis("concurrency", store):
                bound = bound_share(results, store, h, c)
                below = bound is not None and bound < share
                cells = [STORE_TITLES.get(store, store), f"{h:,}", str(c)]
                cells.append(_share(results.speedup("symfonic", "floor", store, h, c)))
                cells.append(_share(bound) + (" (below the target)" if below else ""))
                cells.append(_share(results.speedup("symfonic", BOUND, store, h, c)))
                rows.append(cells)
    header = [
        "store",
        "history",
        "conc.",
        "symfonic ÷ floor",
        "floor + model calls ÷ floor: the most reachable",
        "symfonic ÷ floor + model calls",
    ]
    return [
        f"How much of the floor is reachable (target: {share:.0%}). The floor + model calls is "
        "the floor's three commits with the cycle's two langchain-core model calls in their "
        "places, on a history built once and kept in memory: no runtime that calls a "
        "langchain-core model does less, so its share of the floor is the most any can reach. "
        "The last column is what is left to the runtime: symfonic's own cost, the history's "
        "read and rebuild included. Ratios are paired by round, like the targets'.",
        "",
        *markdown_table(header, rows),
    ]


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
    def marginal_ratio(self) -> float | None:
        return None if self.symfonic <= 0 else self.langgraph / self.symfonic

    @property
    def symfonic_allowed(self) -> float:
        """The most a message may cost symfonic for the ratio not to fall over this step."""
        return self.langgraph / self.ratio_at_low

    @property
    def widens(self) -> bool:
        return self.symfonic <= self.symfonic_allowed


def _cycle_ms(
    results: Results, system: str, store: str, c: int, histories: tuple[int, int]
) -> tuple[float, float] | None:
    """A system's milliseconds per cycle at both histories, if it was measured at both."""
    rates = [results.value(system, store, h, c, "cycles_per_second") for h in histories]
    if not all(rates):
        return None
    return 1000 / rates[0], 1000 / rates[1]


def steps(results: Results) -> list[Step]:
    found: list[Step] = []
    for store in results.axis("store"):
        for c in results.axis("concurrency", store):
            for low, high in itertools.pairwise(results.axis("history", store)):
                ours = _cycle_ms(results, "symfonic", store, c, (low, high))
                theirs = _cycle_ms(results, "langgraph", store, c, (low, high))
                if ours is None or theirs is None:
                    continue
                added = high - low
                found.append(
                    Step(
                        store,
                        c,
                        low,
                        high,
                        symfonic=1000 * (ours[1] - ours[0]) / added,
                        langgraph=1000 * (theirs[1] - theirs[0]) / added,
                        ratio_at_low=theirs[0] / ours[0],
                    )
                )
    return found


def render_marginal(results: Results) -> list[str]:
    found = steps(results)
    if not found:
        return []
    header = [
        "store",
        "conc.",
        "history",
        "symfonic, µs a message",
        "LangGraph, µs a message",
        "LangGraph ÷ symfonic, per message",
        "ratio at the lower history",
        "most symfonic may spend a message",
        "gap widens",
    ]
    lines = [
        "What the widening asks, step by step: the cycle time each added message of history "
        "costs (the difference of 1000 ÷ cycles/s between two histories, each system's median "
        "round, per message). The "
        "ratio rises over a step exactly when LangGraph's cost per message is at least the "
        "ratio at the lower history times symfonic's (`bench/report/bounds.py`). The targets "
        "judge the widening on the median of the rounds' ratios, this table on the median "
        "rounds, so a step within a few percent of the line can read differently in the two.",
        "",
    ]
    rows = [
        [
            STORE_TITLES.get(step.store, step.store),
            str(step.concurrency),
            f"{step.low:,} → {step.high:,}",
            f"{step.symfonic:,.1f}",
            f"{step.langgraph:,.1f}",
            ratio_text(step.marginal_ratio),
            ratio_text(step.ratio_at_low),
            f"{step.symfonic_allowed:,.1f}",
            "yes" if step.widens else "**no**",
        ]
        for step in found
    ]
    return [*lines, *markdown_table(header, rows)]


def render_bounds(results: Results) -> list[str]:
    goals = "/".join(f"{v:.0f}" for v in SPEEDUP_AT_ZERO.values())
    lines = [
        "## What bounds symfonic here",
        "",
        "Milliseconds per cycle at history 0 (1000 ÷ cycles/s, all slots together), and the "
        f"slowest symfonic cycle that would meet each target (LangGraph's ÷ {goals}, the "
        f"floor's ÷ {FLOOR_SHARE}):",
        "",
        *_budget_table(results),
        *render_ceiling(results, FLOOR_SHARE),
        *render_marginal(results),
    ]
    return [*lines, ""]
