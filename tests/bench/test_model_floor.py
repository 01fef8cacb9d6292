"""The floor + model calls is the floor's commits with both model calls, whole history each time.

Its speed is reported as the most of the floor any runtime on langchain-core can
reach, so it must do what such a runtime cannot skip: both model calls, each
handed the whole conversation, in their places in the cycle, and the floor's
three commits. It must do nothing more either, or the bound would be too low.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from bench.history import TOOL_NAME, make_history
from bench.report.figures import Results
from bench.report.targets import Check, bound_share, check_targets
from bench.workloads import unavailable_reason, workload_class
from bench.workloads.base import WorkloadSpec
from bench.workloads.floor import SqliteFloor
from bench.workloads.floor_model import ModelFloor
from bench.workloads.scripted_model import ScriptedToolModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from report_support import measured_row

pytestmark = pytest.mark.anyio

HISTORY = 6


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[list[BaseMessage]]:
    """Every transcript the scripted model is handed."""
    calls: list[list[BaseMessage]] = []
    generate = ScriptedToolModel._agenerate

    async def recording(self: ScriptedToolModel, messages: list[BaseMessage], **kw: Any) -> Any:
        calls.append(list(messages))
        return await generate(self, messages, **kw)

    monkeypatch.setattr(ScriptedToolModel, "_agenerate", recording)
    return calls


def spec(path: Path) -> WorkloadSpec:
    return WorkloadSpec("sqlite", str(path), 1, make_history(HISTORY))


def test_it_is_a_system_the_harness_runs_on_both_stores() -> None:
    assert unavailable_reason("floor+model") is None
    assert workload_class("floor+model", "sqlite") is ModelFloor
    assert workload_class("floor+model", "postgresql") is ModelFloor


async def test_a_cycle_calls_the_model_twice_on_the_whole_history_around_the_floors_commits(
    tmp_path: Path, seen: list[list[BaseMessage]]
) -> None:
    workload = ModelFloor(spec(tmp_path / "bound.db"))
    await workload.open()
    try:
        await workload.setup()
        (session,) = await workload.add_sessions(1)
        handle = await workload.pause(session)
        with sqlite3.connect(tmp_path / "bound.db") as db:
            assert db.execute("SELECT state FROM floor_pauses").fetchall() == [("pending",)]
        await workload.resume(session, handle)
    finally:
        await workload.close()

    first, second = seen
    assert len(first) == HISTORY + 1 and isinstance(first[-1], HumanMessage)
    assert len(second) == HISTORY + 3
    call, result = second[-2], second[-1]
    assert isinstance(call, AIMessage) and call.tool_calls[0]["name"] == TOOL_NAME
    assert isinstance(result, ToolMessage) and result.tool_call_id == call.tool_calls[0]["id"]
    assert [m.content for m in first[:HISTORY]] == [b.content for b in make_history(HISTORY)]
    with sqlite3.connect(tmp_path / "bound.db") as db:
        assert db.execute("SELECT state FROM floor_pauses").fetchall() == [("published",)]
        assert db.execute("SELECT revision, message_count FROM floor_sessions").fetchall() == [
            (1, HISTORY + 4)
        ]


async def test_it_writes_exactly_what_the_floor_writes(tmp_path: Path) -> None:
    async def tables_after_a_cycle(path: Path, workload: Any) -> dict[str, int]:
        await workload.open()
        try:
            await workload.setup()
            (session,) = await workload.add_sessions(1)
            await workload.resume(session, await workload.pause(session))
        finally:
            await workload.close()
        with sqlite3.connect(path) as db:
            names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            return {n: db.execute(f"SELECT count(*) FROM {n}").fetchone()[0] for n in names}

    floor = await tables_after_a_cycle(tmp_path / "f.db", SqliteFloor(spec(tmp_path / "f.db")))
    bound = await tables_after_a_cycle(tmp_path / "m.db", ModelFloor(spec(tmp_path / "m.db")))
    assert bound == floor


def _rows(rates: dict[str, float], *, history: int = 0) -> list[dict[str, Any]]:
    return [measured_row(system, rate, history=history) for system, rate in rates.items()]


def _results(*configurations: list[dict[str, Any]]) -> Results:
    return Results({"results": [row for rows in configurations for row in rows]})


def _floor_check(results: Results) -> Check:
    (check,) = [c for c in check_targets(results) if "floor" in c.target]
    return check


def test_the_report_says_where_the_floor_target_is_out_of_reach() -> None:
    # The bound reaches 40% of the floor: no runtime on langchain-core reaches 50%.
    results = _results(_rows({"symfonic": 300.0, "floor": 1000.0, "floor+model": 400.0}))
    floor_check = _floor_check(results)
    assert floor_check.met is False and floor_check.out_of_reach is True
    assert bound_share(results, "sqlite", 0, 1) == pytest.approx(0.4)


def test_a_reachable_floor_target_is_not_called_out_of_reach() -> None:
    results = _results(_rows({"symfonic": 300.0, "floor": 1000.0, "floor+model": 600.0}))
    floor_check = _floor_check(results)
    assert floor_check.met is False and floor_check.out_of_reach is False
    assert bound_share(results, "sqlite", 0, 1) == pytest.approx(0.6)


def test_a_miss_within_reach_anywhere_keeps_the_plain_verdict() -> None:
    # Out of reach at history 0, but missed within reach at history 100.
    results = _results(
        _rows({"symfonic": 300.0, "floor": 1000.0, "floor+model": 400.0}),
        _rows({"symfonic": 300.0, "floor": 1000.0, "floor+model": 600.0}, history=100),
    )
    floor_check = _floor_check(results)
    assert floor_check.met is False and floor_check.out_of_reach is False
