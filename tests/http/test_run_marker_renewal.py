"""A live first turn keeps its session past ``run_lease``; a dead worker's hold still lapses.

The run lease is 1 s and a sweep (what any other worker runs) looks for lapsed
holds every 0.1 s. A turn held in its tool for three leases, in the background
or attached to its request, still holds the session: another turn gets 409
``session_busy``, and a queued message waits and runs after it, in order. A
marker nobody renews (its worker died) frees the session a lease after its last
renewal, and the queued message runs then.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import anyio
import httpx
import pytest

from busy_support import ALICE, Holds, busy_session, ended, holding_agent, queued, said, send
from http_support import KEYS, new_session, serve
from symfonic import SymfonicAgent
from symfonic.core.contracts.store import RunRequest

pytestmark = pytest.mark.anyio

LEASE = 1.0
OUTLIVED = 3 * LEASE + 0.3


async def still_held(client: httpx.AsyncClient, session_id: str, queued_run: str) -> None:
    """The session refuses a second turn, and its queued message has not run."""
    refused = await send(client, session_id, "again", ALICE)
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "session_busy"
    view = (await client.get(f"/v1/runs/{queued_run}", headers=ALICE)).json()
    assert view["state"] == "queued"


def agent_of(store_url: str, holds: Holds) -> SymfonicAgent:
    return holding_agent(store_url, holds, run_lease=LEASE)


async def test_a_background_turn_longer_than_the_lease_keeps_its_session(store_url: str) -> None:
    holds = Holds()
    async with serve(agent_of(store_url, holds), api_keys=KEYS, sweep_interval=0.1) as client:
        session_id, first = await busy_session(client, holds)
        waiting = await queued(client, session_id, "one")
        await anyio.sleep(OUTLIVED)
        await still_held(client, session_id, waiting["run_id"])
        holds.release("hold first")
        assert (await ended(client, first))["state"] == "complete"
        outcome = await ended(client, waiting["run_id"])
        history = await said(client, session_id)
    assert outcome["state"] == "complete"
    assert outcome["outcome"]["revision"] == 2
    assert history == ["hold first", "one"]
    assert holds.calls == ["hold first"]


async def test_an_attached_turn_longer_than_the_lease_keeps_its_session(store_url: str) -> None:
    holds = Holds()
    async with serve(agent_of(store_url, holds), api_keys=KEYS, sweep_interval=0.1) as client:
        session_id = await new_session(client, **ALICE)
        answered: list[httpx.Response] = []

        async def attached() -> None:
            answered.append(await send(client, session_id, "hold first", ALICE))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(attached)
            await holds.until_entered("hold first")
            waiting = await queued(client, session_id, "one")
            await anyio.sleep(OUTLIVED)
            await still_held(client, session_id, waiting["run_id"])
            holds.release("hold first")
        outcome = await ended(client, waiting["run_id"])
        history = await said(client, session_id)
    assert answered[0].status_code == 200
    assert "response.complete" in answered[0].text
    assert outcome["state"] == "complete"
    assert outcome["outcome"]["revision"] == 2
    assert history == ["hold first", "one"]


async def test_a_marker_no_longer_renewed_lapses_a_lease_after_its_last_renewal(
    store_url: str,
) -> None:
    agent = agent_of(store_url, Holds())
    async with serve(agent, api_keys=KEYS, sweep_interval=0.1) as client:
        session_id = await new_session(client, **ALICE)
        # A worker that marked the session, renewed once, then died.
        run_id, now = uuid.uuid4().hex, agent.clock()
        lease_until = now + timedelta(seconds=LEASE)
        request = RunRequest(session_id, run_id, now=now, lease_until=lease_until)
        assert await agent.store.begin_run(request) is not None
        waiting = await queued(client, session_id, "one")
        await anyio.sleep(LEASE * 0.6)
        renewed = agent.clock()
        until = renewed + timedelta(seconds=LEASE)
        assert await agent.store.renew_run(session_id, run_id, until)
        assert not await agent.store.renew_run(session_id, uuid.uuid4().hex, until)
        await anyio.sleep(LEASE * 0.6)  # past the first lease, not the renewed one
        await still_held(client, session_id, waiting["run_id"])
        outcome = await ended(client, waiting["run_id"])
        freed = agent.clock()
        history = await said(client, session_id)
    assert freed >= renewed + timedelta(seconds=LEASE)
    assert outcome["state"] == "complete"
    assert history == ["one"]
