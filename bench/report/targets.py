"""The issue's targets, checked against the results, each met or missed by a stated margin.

The checks only read results.json; a target whose figures are missing (symfonic
not measured, a store skipped) says "not measured" rather than guessing. A ratio
of speeds is the median over rounds of the two systems' ratio within a round
(:meth:`Results.speedup`): a round measures a configuration's systems back to
back, so each round's ratio compares them at one moment, which the quotient of
two median rounds, possibly taken minutes apart, does not.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from bench.report.figures import STORE_TITLES, Results, ratio_text

SPEEDUP_AT_ZERO = {"sqlite": 10.0, "postgresql": 5.0}
BYTES_GROWTH_LIMIT = 1.2
FLOOR_SHARE = 0.5


@dataclass(frozen=True)
class Check:
    target: str
    measured: str
    met: bool | None  # None: not measured

    @property
    def verdict(self) -> str:
        return {True: "met", False: "**missed**", None: "not measured"}[self.met]


def _rounds(results: Results, store: str, concurrency: int) -> str:
    """Each round's ratio at history 0, and the quotient of the median rounds beside them."""
    paired = results.round_ratios("symfonic", "langgraph", store, 0, concurrency)
    if len(paired) < 2:
        return ""
    medians = results.ratio("symfonic", "langgraph", store, 0, concurrency, "cycles_per_second")
    return (
        f" (rounds: {', '.join(ratio_text(x) for x in paired)}; "
        f"median rounds' quotient {ratio_text(medians)})"
    )


def _speedup(results: Results, store: str) -> list[Check]:
    checks: list[Check] = []
    goal = SPEEDUP_AT_ZERO.get(store)
    if goal is None:
        return checks
    for c in results.axis("concurrency", store):
        r = results.speedup("symfonic", "langgraph", store, 0, c)
        met = None if r is None else r >= goal
        detail = ratio_text(r)
        if r is not None and r < goal:
            detail += f", {goal / r:.2f}× short" if r > 0 else ", nothing measured"
        detail += _rounds(results, store, c)
        checks.append(
            Check(
                f"{STORE_TITLES[store]}, c={c}: cycles/s ≥ {goal:.0f}× LangGraph at history 0",
                detail,
                met,
            )
        )
        ratios = [
            results.speedup("symfonic", "langgraph", store, h, c)
            for h in results.axis("history", store)
        ]
        known = [x for x in ratios if x is not None]
        widening = None if len(known) < 2 else all(b >= a for a, b in itertools.pairwise(known))
        checks.append(
            Check(
                f"{STORE_TITLES[store]}, c={c}: the gap widens with history",
                " → ".join(ratio_text(x) for x in ratios),
                widening,
            )
        )
    return checks


def _bytes_flat(results: Results, store: str) -> list[Check]:
    histories = results.axis("history", store)
    if len(histories) < 2:
        return []
    low, high = histories[0], histories[-1]
    checks = []
    for c in results.axis("concurrency", store):
        a = results.value("symfonic", store, low, c, "bytes_per_cycle")
        b = results.value("symfonic", store, high, c, "bytes_per_cycle")
        growth = None if not a or b is None else b / a
        met = None if growth is None else growth <= BYTES_GROWTH_LIMIT
        checks.append(
            Check(
                f"{STORE_TITLES[store]}, c={c}: bytes/cycle at history {high:,} "
                f"≤ {BYTES_GROWTH_LIMIT}× history {low}",
                ratio_text(growth),
                met,
            )
        )
    return checks


def _floor_share(results: Results, store: str) -> list[Check]:
    shares = [
        (h, c, results.speedup("symfonic", "floor", store, h, c))
        for h in results.axis("history", store)
        for c in results.axis("concurrency", store)
    ]
    known = [(h, c, s) for h, c, s in shares if s is not None]
    if not known:
        return [Check(f"{STORE_TITLES[store]}: cycles/s ≥ 50% of the floor", "—", None)]
    worst = min(known, key=lambda item: item[2])
    below = [(h, c, s) for h, c, s in known if s < FLOOR_SHARE]
    measured = f"lowest {worst[2]:.0%} (h={worst[0]}, c={worst[1]})"
    if below:
        measured += "; below: " + ", ".join(f"h={h} c={c}: {s:.0%}" for h, c, s in below)
    return [
        Check(
            f"{STORE_TITLES[store]}: cycles/s ≥ 50% of the floor, every configuration",
            measured,
            not below,
        )
    ]


def check_targets(results: Results) -> list[Check]:
    checks: list[Check] = []
    for store in results.axis("store"):
        checks += _speedup(results, store) + _bytes_flat(results, store)
        checks += _floor_share(results, store)
    return checks
