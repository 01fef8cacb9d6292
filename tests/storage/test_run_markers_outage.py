"""After a store outage every session takes new turns again within one sweep.

A first turn marks its session running; one that fails while PostgreSQL is down
cannot clear its marker then, and the marker's lease is long (a worker that dies
mid-turn leaves it until the lease runs out). The worker that ran the turn knows
it ended, so its sweeper clears the marker at the first pass the store answers.

The outage is real: a private throwaway cluster is stopped for 15 s under load
from two workers, each with its own sweeper, then started again.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import anyio
import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from private_postgres import Cluster, private_cluster
from symfonic import SymfonicAgent, SymfonicError
from symfonic.core.messages import text_of
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.sweeper import sweep_periodically
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.postgres]

SESSIONS = 24
OUTAGE = 15.0  # seconds the server stays stopped
SWEEP = 2.0  # seconds between each worker's sweeps
STEP = 0.3  # seconds a turn's tool takes: most turns are mid-way when the server stops
SLACK = 3.0  # a sweep's own time, and the first turns' reconnects, on a loaded machine


@pytest.fixture
def private_postgres() -> Iterator[Cluster]:
    with private_cluster() as cluster:
        yield cluster


async def step(note: str) -> str:
    """One slow step of work."""
    await anyio.sleep(STEP)
    return f"stepped {note}"


def stepping_turn(messages: list[BaseMessage]) -> AIMessage | str:
    """Every turn calls ``step`` once, then answers with what it said."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return reply(f"done: {text_of(last)}")
    return call("step", {"note": text_of(last)})


@asynccontextmanager
async def worker(url: str) -> AsyncIterator[SymfonicAgent]:
    """One worker: an agent, served with its own sweeper, as ``symfonic serve`` runs it."""
    agent = SymfonicAgent(
        model=ScriptedChatModel(respond=stepping_turn), tools=[step], store=url
    )
    host = ServiceHost([agent])
    await host.open()
    try:
        async with anyio.create_task_group() as background:
            background.start_soon(sweep_periodically, host, SWEEP)
            yield agent
            background.cancel_scope.cancel()
    finally:
        await host.aclose()


async def outcome(agent: SymfonicAgent, session_id: str) -> str:
    try:
        result = await agent.run("hello", session_id)
    except SymfonicError as refused:
        return refused.code
    return result.status if result.error is None else result.error.code


async def test_every_session_takes_turns_within_one_sweep_of_a_15_s_outage(
    private_postgres: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    url = private_postgres.url
    async with worker(url) as a, worker(url) as b:
        sessions = [await a.create_session() for _ in range(SESSIONS)]
        during: Counter[str] = Counter()
        stopping = anyio.Event()

        async def load(agent: SymfonicAgent, session_id: str, i: int) -> None:
            await anyio.sleep(i * STEP / SESSIONS)  # every phase of a turn meets the stop
            while not stopping.is_set():
                during[await outcome(agent, session_id)] += 1
                await anyio.sleep(0.05)

        async with anyio.create_task_group() as turns:
            for i, session_id in enumerate(sessions):
                turns.start_soon(load, (a, b)[i % 2], session_id, i)
            await anyio.sleep(2 * STEP)
            await private_postgres.stop()
            await anyio.sleep(OUTAGE)
            stopping.set()
        await private_postgres.start()
        back = anyio.current_time()

        # Within one sweep of the server's return, every session takes a turn.
        free: dict[str, float] = {}  # when its first turn since was accepted
        refused: Counter[str] = Counter()

        async def attempt(agent: SymfonicAgent, session_id: str) -> None:
            asked = anyio.current_time() - back
            said = await outcome(agent, session_id)
            if said == "complete":
                free[session_id] = asked
            else:
                refused[said] += 1

        deadline = back + SWEEP + SLACK
        while len(free) < SESSIONS and anyio.current_time() < deadline:
            async with anyio.create_task_group() as attempts:
                for i, session_id in enumerate(sessions):
                    if session_id not in free:
                        attempts.start_soon(attempt, (a, b)[i % 2], session_id)
            await anyio.sleep(0.1)

    sweeps_failed = sum("sweep failed" in r.getMessage() for r in caplog.records)
    print(
        f"\n{OUTAGE:.0f} s outage under {SESSIONS} sessions: during it {dict(during)}; "
        f"after it {len(free)} of {SESSIONS} sessions took a turn, the last "
        f"{max(free.values(), default=float('nan')):.1f} s after the server was back "
        f"(one sweep is {SWEEP:.0f} s); refused meanwhile {dict(refused)}; "
        f"{sweeps_failed} sweeps failed during the outage"
    )
    assert during["complete"] > 0 and during["store_unavailable"] > 0, during
    assert sorted(free) == sorted(sessions), f"still refused: {dict(refused)}"
    assert max(free.values()) < SWEEP + SLACK
