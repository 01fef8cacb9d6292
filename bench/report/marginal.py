"""What the "gap widens" target asks of each added message of history.

Between two histories ``a < b`` a system's cycle grows by its marginal cost, the
milliseconds per cycle that the ``b - a`` extra messages add. The ratio at ``b``
is then a mediant of the ratio at ``a`` and of the two systems' marginal costs::

    (L_a + ΔL) / (S_a + ΔS)  ≥  L_a / S_a   exactly when   ΔL / ΔS  ≥  L_a / S_a

so the gap widens from ``a`` to ``b`` exactly when LangGraph's marginal cost is
at least the ratio at ``a`` times symfonic's. The table puts the two side by side,
with the most symfonic's added message may cost for the gap to widen, all
computed from this run's cycles per second.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from bench.report.figures import STORE_TITLES, Results, markdown_table, ratio_text


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
        "ratio at the lower history times symfonic's (`bench/report/marginal.py`). The targets "
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
