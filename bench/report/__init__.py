"""The report: results.json → ``docs/benchmarks.md`` and its PNG plots beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.report.figures import Results
from bench.report.markdown import render


def write_report(document: dict[str, Any], report_path: Path) -> list[Path]:
    """Write the Markdown report and its plots (in the report's folder); return the paths."""
    # matplotlib comes with the bench extra; the report's text, targets and bounds
    # import without it (the tests read them with the dev extra alone).
    from bench.report.plots import write_plots

    results = Results(document)
    report_path.parent.mkdir(parents=True, exist_ok=True)
    plots = write_plots(results, report_path.parent)
    report_path.write_text(render(results, [plot.name for plot in plots]))
    return [report_path, *plots]
