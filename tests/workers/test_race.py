"""Two worker processes race 32 resumes each on every one of 50 tokens (PostgreSQL).

Each racer answers differently, so a racer that did not win cannot be mistaken
for a replay of the winner: exactly one resume per token completes, everyone
else is told the pause is already claimed, every session publishes exactly one
turn, and its history rows are written once and hold the winner's answer.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import asyncpg
import pytest

from symfonic.core.contracts.types import PauseState
from workers.agents import worker_agent
from workers.client import workers

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.postgres]

TOKENS = 50
RACERS = 32
WORKERS = 2
POOL_SIZE = 16  # per worker: racers queue on it; pool timeout is far away


async def pool_size_that_fits(url: str) -> int:
    """At most POOL_SIZE, leaving room for what else uses the server right now."""
    conn = await asyncpg.connect(url)
    try:
        limit = int(await conn.fetchval("SHOW max_connections"))
        in_use = int(await conn.fetchval("SELECT count(*) FROM pg_stat_activity"))
    finally:
        await conn.close()
    size = min(POOL_SIZE, (limit - in_use - 10) // WORKERS)
    assert size >= 2, f"max_connections={limit} with {in_use} in use leaves no room"
    return size


async def test_racing_resumes_across_workers_publish_once_per_token(
    postgres_url: str, tmp_path: Path
) -> None:
    async with worker_agent(postgres_url) as agent:
        paused = [await agent.run(f"ask question {i}?") for i in range(TOKENS)]
    tokens = [p.pause.token for p in paused if p.pause is not None]
    sessions = [p.session_id for p in paused]
    assert len(tokens) == TOKENS

    env = {"SYMFONIC_POOL_SIZE": str(await pool_size_that_fits(postgres_url))}
    async with workers(postgres_url, tmp_path, WORKERS, env) as started:
        for worker in started:
            await worker.call("open")
        for worker in started:
            await worker.send("race", tokens=tokens, racers=RACERS, tag=worker.name)
        reports = {worker.name: await worker.receive(within=120) for worker in started}

    winners: dict[int, str] = {}
    for report in reports.values():
        for index, answer in report["won"].items():
            assert int(index) not in winners, f"token {index} was won by two workers"
            winners[int(index)] = answer
    assert sorted(winners) == list(range(TOKENS))
    # Both workers won some tokens: they really raced each other, not in turns.
    assert all(report["won"] for report in reports.values())
    refused = sum((Counter(r["refused"]) for r in reports.values()), start=Counter[str]())
    # A loser is refused while the winner runs, or, if it reads the pause only after
    # the winner published, as answered with another answer: never anything else.
    assert set(refused) <= {"refused:already_claimed", "refused:already_answered"}
    assert sum(refused.values()) == WORKERS * RACERS * TOKENS - TOKENS

    conn = await asyncpg.connect(postgres_url)
    try:
        rows = await conn.fetch(
            "SELECT session_id, revision, count(*) AS n, count(DISTINCT seq) AS seqs "
            "FROM symfonic_messages GROUP BY session_id, revision"
        )
        revisions = dict(
            await conn.fetch("SELECT session_id, revision FROM symfonic_sessions")
        )
    finally:
        await conn.close()
    # One publish per session: one revision of rows, the same size everywhere.
    assert sorted(r["session_id"] for r in rows) == sorted(sessions)
    assert {(r["revision"], r["n"], r["seqs"]) for r in rows} == {(1, 4, 4)}
    assert all(revisions[s] == 1 for s in sessions)

    async with worker_agent(postgres_url) as agent:
        for index, session_id in enumerate(sessions):
            [pause] = await agent.store.session_pauses(session_id)
            history = await agent.store.history(session_id, 1)
            assert pause.state is PauseState.PUBLISHED
            # The row, the history and the reported winner name the same racer.
            assert winners[index] == f"done: {pause.answer}" == history[-1]["content"]
            assert history[2]["content"] == pause.answer
