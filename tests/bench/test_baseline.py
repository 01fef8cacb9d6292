"""``--baseline SRC``: another tree of symfonic measured beside this one, in one run.

A change's before and after must be compared at the same moments of a machine
whose speed drifts; the baseline is one more system of the matrix, run back to
back with the installed symfonic in every configuration of every round.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bench.config import ChildConfig
from bench.matrix import Store, child_env, configurations, median_rounds
from bench.options import parser
from bench.report.baseline import render_baseline
from bench.report.figures import Results
from bench.report.markdown import render
from bench.workloads import BASELINE

from report_support import measured_row


def _tree(tmp_path: Path) -> Path:
    package = tmp_path / "src" / "symfonic"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    return tmp_path / "src"


def test_the_baselines_child_imports_symfonic_from_the_tree_given(tmp_path: Path) -> None:
    source = _tree(tmp_path)
    shown = subprocess.run(
        [sys.executable, "-c", "import symfonic; print(symfonic.__file__)"],
        env=child_env(str(source)),
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(shown.stdout.strip()) == source / "symfonic" / "__init__.py"


def test_only_the_baseline_system_is_given_the_tree() -> None:
    template = ChildConfig("", "sqlite", "", 0, 1, 10, 1.0, 1, 1, 1, "NORMAL")
    planned = configurations(
        template,
        [Store("sqlite", "sqlite")],
        [0],
        [1, 16],
        ["symfonic", BASELINE],
        sources={BASELINE: "/trees/before/src"},
    )
    sources = {(config.system, config.concurrency): config.source for _, config in planned}
    assert sources == {
        ("symfonic", 1): "",
        (BASELINE, 1): "/trees/before/src",
        ("symfonic", 16): "",
        (BASELINE, 16): "/trees/before/src",
    }


def test_a_folder_without_symfonic_is_refused_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parser(None).parse_args(["--baseline", str(tmp_path)])
    assert stopped.value.code == 2
    assert "holds no symfonic package: give the src/ folder" in capsys.readouterr().err
    assert parser(None).parse_args(["--baseline", str(_tree(tmp_path))]).baseline.is_dir()


def _measured(by_round: dict[str, dict[int, float]], history: int) -> list[dict[str, Any]]:
    return [
        measured_row(system, rate, history=history, round=number, cpu_ms_per_cycle=1000 / rate)
        for system, rates in by_round.items()
        for number, rate in rates.items()
    ]


def _results() -> Results:
    # History 0: 0.90, 0.80, 0.95 round by round, median 0.90. History 100: 0.80,
    # 0.75, 0.70, median 0.75, though the median rounds' quotient (400/480) is 0.83.
    rows = _measured(
        {"symfonic": {1: 450.0, 2: 400.0, 3: 475.0}, BASELINE: {1: 500.0, 2: 500.0, 3: 500.0}},
        history=0,
    ) + _measured(
        {"symfonic": {1: 400.0, 2: 375.0, 3: 420.0}, BASELINE: {1: 500.0, 2: 500.0, 3: 600.0}},
        history=100,
    )
    return Results(
        {"meta": {"options": {"baseline": "/trees/before/src"}}, "results": median_rounds(rows)}
    )


def test_each_row_is_judged_on_the_median_of_its_rounds_ratios() -> None:
    table = [line for line in render_baseline(_results()) if line.startswith("| SQLite")]
    assert table == [
        "| SQLite | 0 | 1 | 500 | 450 | 0.90× | 0.90, 0.80, 0.95 | 1.11× | within 15% |",
        "| SQLite | 100 | 1 | 500 | 400 | 0.75× | 0.80, 0.75, 0.70 | 1.25× | **loses 25%** |",
    ]
    assert "1 of 2 rows lose more than 15%" in "\n".join(render_baseline(_results()))


def test_the_report_has_the_section_only_when_a_baseline_ran() -> None:
    with_baseline = render(_results())
    assert "## Against the baseline" in with_baseline
    assert "`/trees/before/src`" in with_baseline
    alone = Results({"results": median_rounds(_measured({"symfonic": {1: 450.0}}, 0))})
    assert "## Against the baseline" not in render(alone)
