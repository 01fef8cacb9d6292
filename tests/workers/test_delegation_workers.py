"""A delegated pause across worker processes: created on one, resumed on another.

The parent delegates to a helper whose question or gated tool pauses both. The
pause is made on worker A and answered on worker B, which never saw it; 32
resumes race for one token across two workers and exactly one publishes, once
in each session; and a worker killed mid-resume, while the helper's gated tool
runs, leaves both claims to lapse: the sweeper abandons both, and both sessions
take new turns.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from symfonic import PauseAbandoned
from symfonic.core.contracts.types import PauseState
from workers.agents import delegating_agent
from workers.client import workers

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

DELEGATING = {"SYMFONIC_TEST_DELEGATING": "1"}
LEASE = 1.5


async def test_a_delegated_pause_made_on_one_worker_is_answered_on_another(
    store_url: str, tmp_path: Path
) -> None:
    async with workers(store_url, tmp_path, 2, DELEGATING) as (a, b):
        made = await a.call("pause", texts=["ask which colour?"])
        (paused,) = made["results"]
        assert paused["status"] == "paused" and paused["token"]
        done = await b.call("resume", token=paused["token"], answer="blue")
        assert done["status"] == "complete", done
        assert done["answer"] == "parent: done: blue" and done["revision"] == 1
    async with delegating_agent(store_url) as agent:
        session = await agent.store.get_session(paused["session_id"])
        assert session is not None and session.revision == 1
        (pause,) = await agent.store.session_pauses(paused["session_id"])
        child = await agent.store.get_pause(pause.delegated_pause_id or "")
        assert child is not None and child.state is PauseState.PUBLISHED
        child_session = await agent.store.get_session(child.session_id)
        assert child_session is not None and child_session.revision == 1


async def test_racing_resumes_of_a_delegated_pause_publish_once_in_each_session(
    postgres_url: str, tmp_path: Path
) -> None:
    async with delegating_agent(postgres_url) as agent:
        paused = await agent.run("ask which colour?")
    assert paused.pause is not None
    async with workers(postgres_url, tmp_path, 2, {**DELEGATING, "SYMFONIC_POOL_SIZE": "8"}) as ws:
        for worker in ws:
            await worker.call("open")
        for worker in ws:
            await worker.send("race", tokens=[paused.pause.token], racers=16, tag=worker.name)
        reports = [await worker.receive(within=120) for worker in ws]
    won = [answer for report in reports for answer in report["won"].values()]
    assert len(won) == 1
    refused = sum((Counter(r["refused"]) for r in reports), start=Counter[str]())
    assert set(refused) <= {"refused:already_claimed", "refused:already_answered"}
    assert sum(refused.values()) == 31
    async with delegating_agent(postgres_url) as agent:
        (pause,) = await agent.store.session_pauses(paused.session_id)
        child = await agent.store.get_pause(pause.delegated_pause_id or "")
        assert child is not None and child.state is PauseState.PUBLISHED
        for session_id in (paused.session_id, child.session_id):
            session = await agent.store.get_session(session_id)
            assert session is not None and session.revision == 1
            # One turn's messages, written once: the task, the call, its answer, the reply.
            history = await agent.store.history(session_id, 1)
            assert [m["role"] for m in history] == ["human", "ai", "tool", "ai"]
        assert won[0] == f"parent: done: {child.answer}"


async def test_a_worker_killed_mid_resume_leaves_both_claims_to_the_sweeper(
    store_url: str, tmp_path: Path
) -> None:
    env = {
        **DELEGATING,
        "SYMFONIC_TEST_CLAIM_LEASE": str(LEASE),
        "SYMFONIC_TEST_ANNOUNCE_WORK": "1",
        "SYMFONIC_TEST_WORK_SECONDS": "3600",
    }
    async with delegating_agent(store_url, claim_lease=LEASE) as live:
        paused = await live.run("work on the report")
        assert paused.pause is not None
        parent_row = await live.store.get_pause(paused.pause.pause_id)
        assert parent_row is not None and parent_row.delegated_pause_id is not None
        async with workers(store_url, tmp_path, 1, env) as (doomed,):
            await doomed.send("resume", token=paused.pause.token, answer={"decision": "approve"})
            # The helper's approved tool is running: both claims are held, mid-turn.
            assert await doomed.receive() == {"started": "work on the report"}
            held = [
                await live.store.get_pause(pause_id)
                for pause_id in (parent_row.pause_id, parent_row.delegated_pause_id)
            ]
            assert all(p is not None and p.state is PauseState.CLAIMED for p in held)
            doomed.kill()
            await doomed.process.wait()
        latest = max(p.lease_until for p in held if p is not None and p.lease_until)
        await anyio.sleep((latest - datetime.now(UTC)).total_seconds() + 0.05)
        swept = await live.sweep()
        assert (swept.abandoned, swept.expired) == (2, 0)
        for pause_id in (parent_row.pause_id, parent_row.delegated_pause_id):
            dead = await live.store.get_pause(pause_id)
            assert dead is not None and dead.state is PauseState.ABANDONED
        with pytest.raises(PauseAbandoned):
            await live.resume(paused.pause.token, {"decision": "approve"})
        child = await live.store.get_pause(parent_row.delegated_pause_id)
        assert child is not None
        # Both sessions are usable: neither has an open pause, and the parent takes a turn.
        assert await live.store.open_pause(child.session_id) is None
        assert await live.store.open_pause(paused.session_id) is None
        again = await live.run("ask anything?", paused.session_id)
        assert again.status == "paused" and again.pause is not None
        done = await live.resume(again.pause.token, "yes")
        assert (done.status, done.revision) == ("complete", 1)
