"""The app's background sweeper: stale pauses expire, lapsed claims are abandoned."""

from __future__ import annotations

from datetime import timedelta

import anyio
import pytest

from http_support import (
    APPROVE,
    JSON,
    Clock,
    Gate,
    frames,
    pause_row,
    paused_turn,
    payment_agent,
    serve,
    within_a_second,
)
from symfonic.agent.retention import Retention
from symfonic.core.contracts.types import PauseState

pytestmark = pytest.mark.anyio


async def test_sweeper_expires_a_pending_pause_past_its_ttl(store_url: str) -> None:
    clock = Clock()
    agent = payment_agent(store_url, pause_ttl=60, clock=clock)
    async with serve(agent, sweep_interval=0.01) as client:
        _, paused = await paused_turn(client)
        clock.advance(61)

        async def expired() -> bool:
            return (await pause_row(agent, paused["pause_id"])).state is PauseState.EXPIRED

        await within_a_second(expired)


async def test_sweeper_abandons_a_claim_whose_lease_ran_out(store_url: str) -> None:
    clock, gate = Clock(), Gate()
    agent = payment_agent(store_url, tool=gate.pay, claim_lease=30, clock=clock)
    async with serve(agent, sweep_interval=0.01) as client:
        session_id, paused = await paused_turn(client)
        ended: list[str] = []

        async def resume() -> None:
            body = {"token": paused["pause_token"], "answer": APPROVE}
            ended.append((await client.post("/v1/resume", json=body)).text)

        async def abandoned() -> bool:
            return (await pause_row(agent, paused["pause_id"])).state is PauseState.ABANDONED

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(resume)
            await gate.entered.wait()
            clock.advance(31)  # this worker looks dead: its lease was not renewed in time
            await within_a_second(abandoned)
            gate.release.set()
        last = frames(ended[0])[-1]
        assert last.event == "error"
        assert (await pause_row(agent, paused["pause_id"])).state is PauseState.ABANDONED
        view = (await client.get(f"/v1/sessions/{session_id}")).json()
        assert (view["status"], view["revision"]) == ("idle", 0)
        turn = await client.post(
            f"/v1/sessions/{session_id}/turns", json={"message": "pay"}, headers=JSON
        )
        assert turn.json()["status"] == "paused"


async def test_with_a_retention_the_sweeper_prunes_idle_finished_sessions(
    store_url: str,
) -> None:
    clock = Clock()
    agent = payment_agent(store_url, pause_ttl=90 * 86400, clock=clock)
    retention = Retention(timedelta(days=30))
    async with serve(agent, sweep_interval=0.01, retention=retention) as client:
        finished, paused = await paused_turn(client)
        body = {"token": paused["pause_token"], "answer": APPROVE}
        assert (await client.post("/v1/resume", json=body, headers=JSON)).status_code == 200
        waiting, _ = await paused_turn(client)
        clock.advance(31 * 86400)

        async def pruned() -> bool:
            return await agent.store.get_session(finished) is None

        await within_a_second(pruned)
        assert (await client.get(f"/v1/sessions/{waiting}")).status_code == 200
        assert (await client.get(f"/v1/sessions/{finished}")).status_code == 404
