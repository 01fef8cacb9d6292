"""The report's "Against the baseline": symfonic beside another tree of itself, row by row.

``--baseline SRC`` measures the symfonic in ``SRC`` as one more system. The
matrix runs a configuration's systems back to back, so each round compares the
two trees at one moment of a machine whose speed drifts by more than the losses
worth looking for; a row's ratio is the median of its rounds' own ratios, and
the rounds are listed so a reader sees how far they agree. A row whose
cycles per second fell by more than ``LOSS_BOUND`` is called out.
"""

from __future__ import annotations

from bench.report.figures import STORE_TITLES, Results, markdown_table, ratio_text
from bench.workloads import BASELINE

# The share of cycles per second a change may lose in a row before it is called out.
LOSS_BOUND = 0.15


def _loses(ratio: float | None) -> bool:
    """``ratio``: this tree's cycles per second ÷ the baseline's."""
    return ratio is not None and ratio < 1 - LOSS_BOUND


def verdict(ratio: float | None) -> str:
    if ratio is None:
        return "—"
    return f"**loses {1 - ratio:.0%}**" if _loses(ratio) else f"within {LOSS_BOUND:.0%}"


def _rate(results: Results, system: str, store: str, history: int, concurrency: int) -> str:
    value = results.value(system, store, history, concurrency, "cycles_per_second")
    return "—" if value is None else f"{float(value):,.0f}"


def render_baseline(results: Results) -> list[str]:
    if BASELINE not in results.systems() or "symfonic" not in results.systems():
        return []
    source = results.meta.get("options", {}).get("baseline") or "the baseline tree"
    rows, losing = [], 0
    for store in results.axis("store"):
        for history in results.axis("history", store):
            for concurrency in results.axis("concurrency", store):
                where = (store, history, concurrency)
                ratio = results.speedup("symfonic", BASELINE, *where)
                rounds = results.round_ratios("symfonic", BASELINE, *where)
                cpu = results.ratio("symfonic", BASELINE, *where, "cpu_ms_per_cycle")
                losing += _loses(ratio)
                rows.append(
                    [
                        STORE_TITLES.get(store, store),
                        f"{history:,}",
                        str(concurrency),
                        _rate(results, BASELINE, *where),
                        _rate(results, "symfonic", *where),
                        ratio_text(ratio),
                        ", ".join(f"{r:.2f}" for r in rounds) or "—",
                        ratio_text(cpu),
                        verdict(ratio),
                    ]
                )
    header = (
        "store | history | conc. | baseline cycles/s | symfonic cycles/s | symfonic ÷ baseline | "
        "each round's ratio | CPU a cycle, symfonic ÷ baseline | verdict"
    )
    summary = (
        f"{losing} of {len(rows)} rows lose more than {LOSS_BOUND:.0%} of cycles per second."
        if losing
        else f"No row loses more than {LOSS_BOUND:.0%} of cycles per second."
    )
    return [
        "## Against the baseline",
        "",
        f"This tree's symfonic beside the one in `{source}`, measured in the same run, each",
        "configuration's two back to back in every round. A row's ratio is the median of",
        "its rounds' ratios; CPU a cycle is the benchmark process's, in each one's median",
        f"round. {summary}",
        "",
        *markdown_table(header, rows),
    ]
