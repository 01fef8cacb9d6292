"""A client that drops an SSE stream mid-turn: the turn stops, and nothing is left claimed.

These run the app under a real uvicorn server (in this process, on a loopback
port) because the in-memory transport never reports a disconnect.
"""

from __future__ import annotations

import anyio
import pytest

from http_support import (
    APPROVE,
    JSON,
    Gate,
    pause_row,
    paused_turn,
    payment_agent,
    scripted,
    uvicorn_serving,
    within_a_second,
)
from symfonic import SymfonicAgent
from symfonic.core.contracts.types import PauseState
from symfonic.server.app import create_app
from symfonic.testing import call, reply

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_dropping_a_resumed_stream_abandons_the_pause(store_url: str) -> None:
    gate = Gate()
    agent = payment_agent(store_url, tool=gate.pay)
    async with uvicorn_serving(create_app(agent, api_keys="", sweep_interval=0)) as client:
        _, paused = await paused_turn(client)
        body = {"token": paused["pause_token"], "answer": APPROVE}
        async with client.stream("POST", "/v1/resume", json=body) as response:
            assert response.status_code == 200
            assert await anext(response.aiter_lines()) == "event: turn.started"
            await gate.entered.wait()
            assert (await pause_row(agent, paused["pause_id"])).state is PauseState.CLAIMED
        # Leaving the block closed the connection while the approved tool was running.
        with anyio.fail_after(1.0):
            await gate.cancelled.wait()

        async def abandoned() -> bool:
            return (await pause_row(agent, paused["pause_id"])).state is PauseState.ABANDONED

        await within_a_second(abandoned)
        assert gate.calls == []
        again = await client.post("/v1/resume", json=body)
        assert (again.status_code, again.json()["error"]["code"]) == (410, "pause_abandoned")


async def test_dropping_a_first_turn_leaves_the_session_usable(sqlite_url: str) -> None:
    gate = Gate()
    agent = SymfonicAgent(
        model=scripted(call("pay", {"amount": 1}), reply("done")), tools=[gate.pay],
        store=sqlite_url,
    )
    async with uvicorn_serving(create_app(agent, api_keys="", sweep_interval=0)) as client:
        session_id = (await client.post("/v1/sessions", json={})).json()["session_id"]
        url = f"/v1/sessions/{session_id}/turns"
        async with client.stream("POST", url, json={"message": "go"}) as response:
            assert await anext(response.aiter_lines()) == "event: turn.started"
            await gate.entered.wait()
        with anyio.fail_after(1.0):
            await gate.cancelled.wait()

        async def idle() -> bool:
            view = await client.get(f"/v1/sessions/{session_id}")
            return bool(view.json()["status"] == "idle")

        await within_a_second(idle)
        gate.release.set()
        again = await client.post(url, json={"message": "go"}, headers=JSON)
        assert again.json()["status"] == "complete"
        assert again.json()["revision"] == 1
