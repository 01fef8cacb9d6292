"""The report's step-by-step reading of "the gap widens" agrees with the ratios it explains.

``bench/report/bounds.py`` says the ratio rises over a step exactly when LangGraph's
cost per added message is at least the lower history's ratio times symfonic's. That
is algebra on the run's own cycles per second, so it must never contradict the
ratios the targets table compares.
"""

from __future__ import annotations

import pytest
from bench.report.bounds import steps
from bench.report.figures import Results
from hypothesis import given
from hypothesis import strategies as st

from report_support import measured_row

rates = st.floats(min_value=0.5, max_value=5000, allow_nan=False)


def results(symfonic: tuple[float, float], langgraph: tuple[float, float]) -> Results:
    rows = [
        measured_row(system, rate, history=history)
        for system, pair in (("symfonic", symfonic), ("langgraph", langgraph))
        for history, rate in zip((0, 100), pair, strict=True)
    ]
    return Results({"results": rows})


@given(rates, rates, rates, rates)
def test_a_step_widens_exactly_when_the_ratio_rises(
    s_low: float, s_high: float, l_low: float, l_high: float
) -> None:
    (step,) = steps(results((s_low, s_high), (l_low, l_high)))
    ratio_low, ratio_high = s_low / l_low, s_high / l_high
    if abs(ratio_high - ratio_low) > 1e-9 * ratio_low:
        assert step.widens == (ratio_high > ratio_low)
    assert step.ratio_at_low == pytest.approx(ratio_low)


def test_costs_are_microseconds_a_cycle_gains_per_added_message() -> None:
    # symfonic: 1 ms → 2 ms a cycle over 100 messages; LangGraph: 10 ms → 30 ms.
    (step,) = steps(results((1000, 500), (100, 1000 / 30)))
    assert step.symfonic == pytest.approx(10.0)
    assert step.langgraph == pytest.approx(200.0)
    # The ratio at history 0 is 10×: symfonic may spend up to 20 µs a message.
    assert step.symfonic_allowed == pytest.approx(20.0)
    assert step.widens


def test_a_system_not_measured_at_both_histories_gives_no_step() -> None:
    partial = results((1000, 500), (100, 50))
    partial.rows[-1]["status"] = "error"
    assert steps(Results({"results": partial.rows})) == []
