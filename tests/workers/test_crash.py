"""A worker killed with ``kill -9`` while it holds a claim costs that turn, nothing more.

The dead worker's claim stays ``claimed`` until its lease runs out (a live
worker cannot tell a dead worker from a slow one sooner), then any live worker's
sweep moves it to ``abandoned``; the session takes a new turn, and its history
holds what was published before and after, nothing from the dead turn.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from symfonic import PauseAbandoned
from symfonic.core.contracts.types import PauseState
from workers.agents import worker_agent
from workers.client import workers

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LEASE = 1.5


async def test_a_claim_held_by_a_killed_worker_is_abandoned_after_its_lease(
    store_url: str, tmp_path: Path
) -> None:
    env = {
        "SYMFONIC_TEST_CLAIM_LEASE": str(LEASE),
        "SYMFONIC_TEST_ANNOUNCE_WORK": "1",
        "SYMFONIC_TEST_WORK_SECONDS": "3600",
    }
    async with worker_agent(store_url, claim_lease=LEASE) as live:
        before = await live.run("hello")
        session_id = before.session_id
        paused = await live.run("work on the report", session_id)
        assert paused.pause is not None
        async with workers(store_url, tmp_path, 1, env) as (doomed,):
            await doomed.send("resume", token=paused.pause.token, answer={"decision": "approve"})
            # The approved tool is running, so the claim is held, mid-turn.
            assert await doomed.receive() == {"started": "work on the report"}
            held = await live.store.get_pause(paused.pause.pause_id)
            assert held is not None and held.state is PauseState.CLAIMED
            doomed.kill()
            await doomed.process.wait()
        assert held.lease_until is not None
        # Until the lease runs out nobody may take the claim away.
        early = await live.store.sweep(held.lease_until - timedelta(milliseconds=1))
        assert early.abandoned == 0
        await anyio.sleep((held.lease_until - datetime.now(UTC)).total_seconds() + 0.05)
        swept = await live.sweep()
        assert (swept.abandoned, swept.expired) == (1, 0)

        dead = await live.store.get_pause(paused.pause.pause_id)
        assert dead is not None and dead.state is PauseState.ABANDONED
        with pytest.raises(PauseAbandoned):
            await live.resume(paused.pause.token, {"decision": "approve"})
        after = await live.run("hello again", session_id)
        assert (after.status, after.revision) == ("complete", 2)
        history = await live.store.history(session_id, 2)
    assert [m["content"] for m in history] == [
        "hello", "echo: hello", "hello again", "echo: hello again",
    ]
