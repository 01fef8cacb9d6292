"""A takeover that lands the moment a turn has set its run marker, before that turn's first step.

The turn is this worker's, so the takeover stops it at once: the stop is found from the
moment the marker is set, and the stopped turn never reaches its tool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from busy_support import Holds, holding_agent
from symfonic.core.contracts.store import RunRequest, RunStart

pytestmark = pytest.mark.anyio


async def test_a_turn_taken_over_as_its_marker_is_set_never_runs_its_tool(tmp_path: Path) -> None:
    holds = Holds()
    async with holding_agent(f"sqlite:///{tmp_path / 'symfonic.db'}", holds) as agent:
        session_id = await agent.create_session()
        taken_over: list[Any] = []
        begin_run = agent.store.begin_run

        async def begin_then_taken_over(request: RunRequest) -> RunStart | None:
            start = await begin_run(request)
            # Another request on this worker interrupts before the turn's next line runs.
            taken_over.append(await agent.run("instead", session_id, on_busy="interrupt"))
            return start

        agent.store.begin_run = begin_then_taken_over  # type: ignore[method-assign]
        with anyio.fail_after(10):  # a turn that was not stopped would hold in its tool
            first = await agent.run("hold first", session_id)
        agent.store.begin_run = begin_run  # type: ignore[method-assign]

    assert taken_over[0].status == "complete" and taken_over[0].answer == "echo: instead"
    assert first.status == "failed" and first.error is not None
    assert first.error.code == "run_cancelled" and holds.calls == []
