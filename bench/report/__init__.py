"""The report: results.json → ``docs/benchmarks.md``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.report.figures import Results
from bench.report.markdown import render


def write_report(document: dict[str, Any], report_path: Path) -> list[Path]:
    """Write the Markdown report; return the paths written."""
    report_path.parent.mkdir(parents=True, exist_ok=True)
    report_path.write_text(render(Results(document)))
    return [report_path]
