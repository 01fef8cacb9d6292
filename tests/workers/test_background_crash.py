"""A worker killed with ``kill -9`` mid-way through a background resume costs that run.

The run stays ``running`` while its lease holds, then reads ``failed``; the
claim it held is abandoned by a live worker's sweep, as for any dead worker;
and the session takes a new turn.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from symfonic.core.contracts.run_events import RunState
from symfonic.core.contracts.types import PauseState
from workers.agents import worker_agent
from workers.client import workers

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LEASE = 1.5


async def test_a_background_resume_on_a_killed_worker_fails_and_its_claim_is_abandoned(
    store_url: str, tmp_path: Path
) -> None:
    env = {
        "SYMFONIC_TEST_CLAIM_LEASE": str(LEASE),
        "SYMFONIC_TEST_ANNOUNCE_WORK": "1",
        "SYMFONIC_TEST_WORK_SECONDS": "3600",
    }
    async with worker_agent(store_url, claim_lease=LEASE) as live:
        paused = await live.run("work on the report")
        assert paused.pause is not None
        async with workers(store_url, tmp_path, 1, env) as (doomed,):
            await doomed.send(
                "start_resume", token=paused.pause.token, answer={"decision": "approve"}
            )
            said = [await doomed.receive(), await doomed.receive()]
            assert {"started": "work on the report"} in said
            run_id = next(each["run_id"] for each in said if "run_id" in each)
            doomed.kill()
            await doomed.process.wait()
        record = await live.store.run_record(run_id)
        assert record is not None
        assert record.state_at(datetime.now(UTC)) is RunState.RUNNING
        await anyio.sleep((record.lease_until - datetime.now(UTC)).total_seconds() + 0.05)
        lost = await live.store.run_record(run_id)  # as its dead worker left it
        assert lost is not None and lost.state_at(datetime.now(UTC)) is RunState.FAILED
        assert (await live.sweep()).abandoned == 1
        pause = await live.store.get_pause(paused.pause.pause_id)
        assert pause is not None and pause.state is PauseState.ABANDONED
        after = await live.run("hello", paused.session_id)
        assert after.status == "complete"
