"""How much of the floor a runtime on langchain-core can reach at all, as this run measured it.

The floor target compares symfonic with the database alone. The floor + model calls
system (:mod:`bench.workloads.floor_model`) is the floor with the two model calls
every langchain-core runtime makes, and nothing else: no history read, decoded or
built. Its share of the floor's speed is therefore the most any such runtime
reaches in that configuration; where it is below the target's share, the target is
out of reach whatever the runtime does, and symfonic's distance to *it* is what is
left to the runtime.
"""

from __future__ import annotations

from bench.report.figures import STORE_TITLES, Results, markdown_table

BOUND = "floor+model"


def bound_share(results: Results, store: str, history: int, concurrency: int) -> float | None:
    """The floor + model calls' cycles per second as a share of the floor's, paired by round."""
    return results.speedup(BOUND, "floor", store, history, concurrency)


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
