"""Separate worker processes on one database behave as one service.

A pause made by one process is resumed by another that never saw it (the first
is dead by then), and workers opening a fresh database at the same moment
migrate it once and agree on one token secret, so any worker verifies any
worker's tokens.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from symfonic.core.contracts.types import PauseState
from workers.agents import worker_agent
from workers.client import workers

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_pause_made_in_one_process_is_resumed_in_another(
    store_url: str, tmp_path: Path
) -> None:
    async with workers(store_url, tmp_path, 2) as (a, b):
        [paused] = (await a.call("pause", texts=["ask which colour?"]))["results"]
        assert paused["status"] == "paused"
        a.kill()
        await a.process.wait()
        done = await b.call("resume", token=paused["token"], answer="blue")
    assert (done["status"], done["answer"], done["revision"]) == ("complete", "done: blue", 1)
    session_id = paused["session_id"]
    async with worker_agent(store_url) as agent:
        history = await agent.store.history(session_id, 1)
        [pause] = await agent.store.session_pauses(session_id)
    assert [m["role"] for m in history] == ["human", "ai", "tool", "ai"]
    assert history[2]["content"] == "blue" and history[3]["content"] == "done: blue"
    assert pause.state is PauseState.PUBLISHED and pause.answer == "blue"


async def test_workers_opening_a_fresh_database_at_once_share_one_secret(
    store_url: str, tmp_path: Path
) -> None:
    async with workers(store_url, tmp_path, 3) as started:
        for worker in started:  # all three open (migrate, create the secret) together
            await worker.send("open")
        secrets = {(await worker.receive())["secret"] for worker in started}
        assert len(secrets) == 1
        # A token minted by one worker is good on another.
        [paused] = (await started[0].call("pause", texts=["ask anything?"]))["results"]
        done = await started[2].call("resume", token=paused["token"], answer="yes")
        assert done["status"] == "complete"
