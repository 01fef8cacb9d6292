"""A PostgreSQL restart under load loses and duplicates nothing; workers reconnect.

The restart is real (``pg_ctl -m fast``: every connection is closed, the server
is unreachable until it is back), on a private throwaway cluster so that
restarting it disturbs nothing else using the shared server. The test is skipped
where the PostgreSQL server binaries (``initdb``, ``pg_ctl``) are not installed.

A resume whose claim was won before the restart publishes through it: its
writes wait within the claim's lease, so no answer is lost. One refused while
the server was down claimed nothing, and its token answers again afterwards.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator

import anyio
import asyncpg
import pytest

from private_postgres import Cluster, private_cluster
from symfonic import SymfonicAgent
from symfonic.core.contracts.errors import StoreUnavailable
from symfonic.testing import ScriptedChatModel
from workers.agents import respond
from workers.load import APPROVE, run_load

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.postgres]


@pytest.fixture
def private_postgres() -> Iterator[Cluster]:
    with private_cluster() as cluster:
        yield cluster


async def test_a_restart_under_load_loses_and_duplicates_nothing(
    private_postgres: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYMFONIC_TEST_WORK_SECONDS", "0.05")
    restarts = 0

    async def restart_midway(done: anyio.Event) -> None:
        nonlocal restarts
        await anyio.sleep(0.25)  # let the first turns get going
        if not done.is_set():
            await private_postgres.restart()
            restarts += 1

    load = await run_load(private_postgres.url, restart_midway)
    assert restarts == 1 and load.failures() > 0, "the load never met the restart"


IN_FLIGHT = 16  # resumes holding a claim when the server goes down
ARRIVING = 16  # resumes that arrive while it is down
OUTAGE = 0.5  # seconds between the server stopping and starting again


class Held:
    """Approved work that waits for ``release``: claims held across the restart."""

    def __init__(self, holding: int) -> None:
        self.release = anyio.Event()
        self.all_in = anyio.Event()  # ``holding`` claims are in their work
        self._holding = holding
        self._entered = 0

    async def slow_work(self, note: str) -> str:
        """Do some slow work; a person must approve it first."""
        self._entered += 1
        if self._entered == self._holding:
            self.all_in.set()
        await self.release.wait()
        return f"worked on {note}"

    def worker(self, url: str) -> SymfonicAgent:
        return SymfonicAgent(
            model=ScriptedChatModel(respond=respond), tools=[self.slow_work],
            approval={"slow_work"}, store=url, claim_lease=30.0,
        )


async def _pause_states(url: str) -> Counter[str]:
    conn = await asyncpg.connect(url)
    try:
        return Counter(r["state"] for r in await conn.fetch("SELECT state FROM symfonic_pauses"))
    finally:
        await conn.close()


async def test_resumes_in_flight_across_a_restart_all_publish_exactly_once(
    private_postgres: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="symfonic.turns.lease")
    url = private_postgres.url
    held = Held(IN_FLIGHT)
    outcomes: dict[str, str] = {}
    async with held.worker(url) as a, held.worker(url) as b:
        tokens: dict[str, str] = {}
        for i in range(IN_FLIGHT + ARRIVING):
            paused = await a.run(f"work item {i}")
            assert paused.pause is not None
            tokens[paused.session_id] = paused.pause.token
        sessions = list(tokens)

        async def resume(agent: SymfonicAgent, session_id: str, delay: float = 0.0) -> None:
            await anyio.sleep(delay)
            try:
                result = await agent.resume(tokens[session_id], APPROVE)
            except StoreUnavailable:
                outcomes[session_id] = "refused"
                return
            outcomes[session_id] = result.status

        with anyio.fail_after(60):
            async with anyio.create_task_group() as turns:
                for i, session_id in enumerate(sessions[:IN_FLIGHT]):
                    turns.start_soon(resume, (a, b)[i % 2], session_id)
                await held.all_in.wait()
                claimed = (await _pause_states(url))["claimed"]
                await private_postgres.stop()
                # The held work ends while the server is down: every publish meets it.
                held.release.set()
                for i, session_id in enumerate(sessions[IN_FLIGHT:]):
                    turns.start_soon(resume, (a, b)[i % 2], session_id, i * 0.02)
                await anyio.sleep(OUTAGE)
                await private_postgres.start()
        refused = [s for s, outcome in outcomes.items() if outcome == "refused"]
        # A resume refused during the outage claimed nothing: its token answers now.
        for session_id in refused:
            outcomes[session_id] = (await a.resume(tokens[session_id], APPROVE)).status
        states = await _pause_states(url)
        conn = await asyncpg.connect(url)
        try:
            rows = dict(await conn.fetch(
                "SELECT session_id, count(*) FROM symfonic_messages GROUP BY session_id"
            ))
            revisions = dict(await conn.fetch("SELECT session_id, revision FROM symfonic_sessions"))
        finally:
            await conn.close()

    retries = [r for r in caplog.records if "retrying" in r.getMessage()]
    retried_writes = sum(1 for r in retries if r.args and r.args[0] == 1)  # type: ignore[index]
    print(
        f"\nrestart: {claimed} resumes in flight, {ARRIVING} arriving during a "
        f"{OUTAGE:.1f} s outage; {retried_writes} writes retried ({len(retries)} retries), "
        f"{len(refused)} refused before a claim and answered again; pauses {dict(states)}"
    )
    assert claimed == IN_FLIGHT
    assert all(outcomes[s] == "complete" for s in sessions[:IN_FLIGHT]), outcomes
    assert outcomes == {s: "complete" for s in sessions}, outcomes
    assert states == {"published": IN_FLIGHT + ARRIVING}, states
    # human, call, tool result, answer: written once each, at revision 1.
    assert rows == {s: 4 for s in sessions} and revisions == {s: 1 for s in sessions}
    assert retried_writes >= IN_FLIGHT, "the restart never met a claimed pause's write"
