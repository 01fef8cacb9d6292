"""The report's PNG plots (matplotlib, Agg backend: no display on a server or in CI).

One grid per figure: a row per store, a column per concurrency, history on the x
axis (evenly spaced: 0 has no place on a log axis) and a line per system on a log
y axis, since the systems differ by orders of magnitude.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

# Agg before pyplot is imported: the report is drawn without a display.
matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bench.report.figures import STORE_TITLES, SYSTEM_TITLES, Results

PLOTS = (
    ("bench_cycles.png", "cycles_per_second", "cycles per second"),
    ("bench_bytes.png", "bytes_per_cycle", "bytes written per cycle"),
    ("bench_latency.png", "resume_p50_ms", "resume latency p50 (ms)"),
)
_STYLE = {"symfonic": "o-", "langgraph": "s--", "floor": "^:", "floor+model": "v-."}


def _plot(results: Results, key: str, label: str, path: Path) -> None:
    stores = results.axis("store")
    concurrencies = results.axis("concurrency")
    figure, axes = plt.subplots(
        len(stores),
        len(concurrencies),
        squeeze=False,
        figsize=(4.6 * len(concurrencies), 3.4 * len(stores)),
    )
    for row, store in enumerate(stores):
        histories = results.axis("history", store)
        for col, concurrency in enumerate(concurrencies):
            ax = axes[row][col]
            for system in results.systems():
                points = [
                    (i, results.value(system, store, h, concurrency, key))
                    for i, h in enumerate(histories)
                ]
                points = [(i, v) for i, v in points if v]
                if points:
                    xs, ys = zip(*points, strict=True)
                    ax.plot(
                        xs, ys, _STYLE.get(system, "x-"), label=SYSTEM_TITLES.get(system, system)
                    )
            ax.set_xticks(range(len(histories)), [f"{h:,}" for h in histories])
            ax.set_yscale("log")
            ax.set_title(f"{STORE_TITLES.get(store, store)}, concurrency {concurrency}")
            ax.set_xlabel("messages of history")
            ax.set_ylabel(label)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_plots(results: Results, directory: Path) -> list[Path]:
    written = []
    for name, key, label in PLOTS:
        path = directory / name
        _plot(results, key, label, path)
        written.append(path)
    return written
