"""The report: results.json → ``docs/benchmarks.md``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.report.figures import Results
from bench.report.markdown import render
from bench.report.runs import render_runs


def write_report(
    document: dict[str, Any], report_path: Path, runs: Path | None = None
) -> list[Path]:
    """Write the Markdown report, with ``runs`` (``python -m bench.runs``'s figures) if
    it exists; return the paths written."""
    report_path.parent.mkdir(parents=True, exist_ok=True)
    tail = render_runs(runs) if runs is not None else []
    report_path.write_text(render(Results(document)) + "".join(f"\n{line}" for line in tail))
    return [report_path]
