"""Turns under fire: two workers (two pools) run turns while something breaks the database.

Half the load resumes approval pauses (claim, tool, publish), half runs first
turns (publish). Whatever ``disrupt`` does meanwhile, afterwards:

- every turn that reported ``complete`` is in its session's history exactly once;
- no session has more than one published revision, or a revision without its
  pause published, or a published pause without its history;
- after a sweep past the lease no pause is ``claimed``; the rest are
  ``published``, ``pending`` (and still answerable) or ``abandoned``;
- both workers, never restarted, then run new turns on every session.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import anyio
import asyncpg

from symfonic import SymfonicAgent, SymfonicError
from symfonic.core.contracts.types import PauseState
from workers.agents import worker_agent

LEASE = 2.0
APPROVE = {"decision": "approve"}


@dataclass
class Load:
    """What each turn reported, by session."""

    resumed: dict[str, str] = field(default_factory=dict)
    first: dict[str, str] = field(default_factory=dict)

    def failures(self) -> int:
        return sum(1 for o in (*self.resumed.values(), *self.first.values()) if o != "complete")


async def _report(turn: Awaitable[object]) -> str:
    try:
        result = await turn
    except SymfonicError as refused:
        return f"refused:{refused.code}"
    status = getattr(result, "status", "?")
    return str(status) if status == "complete" else f"{status}:{result.error.code}"  # type: ignore[attr-defined]


async def run_load(
    url: str,
    disrupt: Callable[[anyio.Event], Awaitable[None]],
    *,
    sessions: int = 32,
    stagger: float = 0.02,
) -> Load:
    """Run the load with ``disrupt(done)`` alongside, then check every invariant."""
    load = Load()
    async with worker_agent(url, claim_lease=LEASE) as a, worker_agent(
        url, claim_lease=LEASE
    ) as b:
        pauses = {}
        for i in range(sessions):
            paused = await a.run(f"work item {i}")
            assert paused.pause is not None
            pauses[paused.session_id] = paused.pause.token
        fresh = [await a.create_session() for _ in range(sessions)]

        done = anyio.Event()

        # Turns start ``stagger`` apart, so the disruption meets every phase of a turn.
        async def resume(agent: SymfonicAgent, session_id: str, i: int) -> None:
            await anyio.sleep(i * stagger)
            load.resumed[session_id] = await _report(agent.resume(pauses[session_id], APPROVE))

        async def first(agent: SymfonicAgent, session_id: str, i: int) -> None:
            await anyio.sleep(i * stagger)
            load.first[session_id] = await _report(agent.run("hello", session_id))

        async with anyio.create_task_group() as disruption:
            disruption.start_soon(disrupt, done)
            async with anyio.create_task_group() as turns:
                for i, session_id in enumerate(pauses):
                    turns.start_soon(resume, (a, b)[i % 2], session_id, i)
                for i, session_id in enumerate(fresh):
                    turns.start_soon(first, (b, a)[i % 2], session_id, i)
            done.set()

        await check(url, a, load, pauses)
        await recover(a, b, load, pauses)
    return load


async def _states(url: str) -> dict[str, PauseState]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT session_id, state FROM symfonic_pauses")
    finally:
        await conn.close()
    return {row["session_id"]: PauseState(row["state"]) for row in rows}


async def check(url: str, agent: SymfonicAgent, load: Load, pauses: dict[str, str]) -> None:
    before_sweep = await _states(url)
    for session_id, outcome in load.resumed.items():
        if outcome.startswith("failed"):
            # The turn started, so it held the claim; its own cleanup abandoned it
            # (or its publish committed and only the reply was lost).
            assert before_sweep[session_id] in (PauseState.ABANDONED, PauseState.PUBLISHED)
    report = await agent.store.sweep(datetime.now(UTC) + timedelta(seconds=LEASE))
    assert report.expired == 0
    states = await _states(url)
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT session_id, revision, count(*) AS n FROM symfonic_messages "
            "GROUP BY session_id, revision"
        )
        revisions = dict(await conn.fetch("SELECT session_id, revision FROM symfonic_sessions"))
    finally:
        await conn.close()
    published = {r["session_id"]: (r["revision"], r["n"]) for r in rows}
    assert len(published) == len(rows), "a session has rows of two revisions"
    for session_id, outcome in load.resumed.items():
        state = states[session_id]
        assert state is not PauseState.CLAIMED, "a claim survived a sweep past its lease"
        if outcome == "complete":
            assert state is PauseState.PUBLISHED
        if state is PauseState.PUBLISHED:
            # human, call, tool result, answer: written once, at revision 1.
            assert published[session_id] == (1, 4) and revisions[session_id] == 1
        else:
            assert state in (PauseState.PENDING, PauseState.ABANDONED), state
            assert session_id not in published and revisions[session_id] == 0
    for session_id, outcome in load.first.items():
        if outcome == "complete":
            assert published[session_id] == (1, 2)
        # A failed first turn published nothing, or (its commit's reply lost
        # with the connection) published once.
        assert published.get(session_id, (1, 2)) == (1, 2)
        assert revisions[session_id] == (1 if session_id in published else 0)


async def recover(
    a: SymfonicAgent, b: SymfonicAgent, load: Load, pauses: dict[str, str]
) -> None:
    """The same two workers, never reopened, serve every session again."""
    outcomes: Counter[str] = Counter()
    for i, session_id in enumerate([*load.resumed, *load.first]):
        agent = (a, b)[i % 2]
        pause = await agent.store.open_pause(session_id)
        if pause is not None:
            outcomes[await _report(agent.resume(pauses[session_id], APPROVE))] += 1
        outcomes[await _report(agent.run("again", session_id))] += 1
    assert outcomes == {"complete": sum(outcomes.values())}, outcomes
