"""A database that fails mid-turn costs no answer it can avoid, and the worker carries on.

Against the real PostgreSQL: a connection dropped in the middle of a publish, a
pool that stays exhausted, and connections terminated under load. A claimed
turn's publish waits out the failure within the claim's lease and publishes
once; a turn that fails anyway leaves its pause pending or abandoned by its own
cleanup, no history is half-written, and the next turn on the same worker succeeds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import asyncpg
import pytest

from symfonic import SymfonicAgent
from symfonic.core.contracts.errors import StoreUnavailable
from symfonic.core.contracts.types import PauseState
from symfonic.storage.postgres import PostgresStore
from symfonic.storage.runs import END_RUN
from symfonic.storage.statements import Dialect
from symfonic.testing import ScriptedChatModel
from workers.agents import respond, worker_agent
from workers.load import run_load

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


@pytest.fixture
async def admin(postgres_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection outside every worker's pool: it locks tables and kills backends."""
    conn = await asyncpg.connect(postgres_url)
    try:
        yield conn
    finally:
        await conn.close()


async def blocked_backend(admin: asyncpg.Connection) -> int:
    """The pid of the worker connection waiting on the admin's lock, once it waits."""
    with anyio.fail_after(10):
        for _ in range(10_000):
            pid = await admin.fetchval(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid() LIMIT 1"
            )
            if pid is not None:
                return int(pid)
            await anyio.sleep(0.01)
    raise AssertionError("no worker connection ever waited on the lock")


async def test_a_connection_dropped_mid_publish_is_retried_and_publishes_once(
    postgres_url: str, admin: asyncpg.Connection
) -> None:
    async with worker_agent(postgres_url) as agent:
        paused = await agent.run("ask which colour?")
        assert paused.pause is not None
        session_id = paused.session_id
        outcome: list[object] = []

        async def resume() -> None:
            outcome.append(await agent.resume(paused.pause.token, "blue"))  # type: ignore[union-attr]

        lock = admin.transaction()
        await lock.start()
        # The publish updates the pause row, then waits here for the session row.
        await admin.execute("LOCK TABLE symfonic_sessions IN EXCLUSIVE MODE")
        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                group.start_soon(resume)
                victim = await blocked_backend(admin)
                assert await admin.fetchval("SELECT pg_terminate_backend($1)", victim)
                await lock.rollback()
        [result] = outcome
        # The killed publish rolled back whole; its retry, on a fresh connection
        # and well inside the claim's lease, published the turn exactly once.
        assert (result.status, result.answer) == ("complete", "done: blue")  # type: ignore[attr-defined]
        pause = await agent.store.get_pause(paused.pause.pause_id)
        assert pause is not None and pause.state is PauseState.PUBLISHED
        session = await agent.store.get_session(session_id)
        assert session is not None and session.revision == 1
        history = await agent.store.history(session_id, 99)
        assert len(history) == 4  # human, call, tool result, answer: once each
        again = await agent.run("hello", session_id)
        assert (again.status, again.revision) == ("complete", 2)


async def test_an_exhausted_pool_refuses_before_the_claim_and_recovers(
    postgres_url: str, admin: asyncpg.Connection
) -> None:
    async with PostgresStore(postgres_url, pool_size=1, pool_timeout=0.3) as store:
        agent = SymfonicAgent(model=ScriptedChatModel(respond=respond), store=store)
        paused = await agent.run("ask which colour?")
        assert paused.pause is not None
        lock = admin.transaction()
        await lock.start()
        await admin.execute("LOCK TABLE symfonic_messages IN ACCESS EXCLUSIVE MODE")
        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                # A slow read holds the pool's only connection...
                group.start_soon(store.history, paused.session_id, 0)
                await blocked_backend(admin)
                # ...so the resume cannot even look its pause up: 503, nothing spent.
                with pytest.raises(StoreUnavailable):
                    await agent.resume(paused.pause.token, "blue")
                await lock.rollback()
        pause = await store.get_pause(paused.pause.pause_id)
        assert pause is not None and pause.state is PauseState.PENDING
        done = await agent.resume(paused.pause.token, "blue")
        assert (done.status, done.answer) == ("complete", "done: blue")


async def test_a_pool_exhausted_mid_turn_is_waited_out_within_the_lease(
    postgres_url: str, admin: asyncpg.Connection
) -> None:
    async with PostgresStore(postgres_url, pool_size=1, pool_timeout=0.3) as store:
        async with anyio.create_task_group() as hogs:
            lock = admin.transaction()
            exhausted = anyio.Event()

            async def slow_work(note: str) -> str:
                """Work that, while it runs, lets a slow read take the only connection."""
                await lock.start()
                await admin.execute("LOCK TABLE symfonic_messages IN ACCESS EXCLUSIVE MODE")
                hogs.start_soon(store.history, session_id, 0)
                await blocked_backend(admin)
                exhausted.set()
                return f"worked on {note}"

            async def outage_of_one_second() -> None:
                await exhausted.wait()
                await anyio.sleep(1)
                await lock.rollback()

            agent = SymfonicAgent(
                model=ScriptedChatModel(respond=respond), tools=[slow_work],
                approval={"slow_work"}, store=store,
            )
            paused = await agent.run("work on the report")
            assert paused.pause is not None
            session_id = paused.session_id
            hogs.start_soon(outage_of_one_second)
            with anyio.fail_after(20):
                # The publish cannot get a connection for a second; the claim's
                # lease (120 s) outlasts that, so the publish waits it out.
                done = await agent.resume(paused.pause.token, {"decision": "approve"})
        assert done.status == "complete"
        pause = await store.get_pause(paused.pause.pause_id)
        assert pause is not None and pause.state is PauseState.PUBLISHED
        assert len(await store.history(session_id, 99)) == 4
        again = await agent.run("hello", session_id)
        assert (again.status, again.revision) == ("complete", 2)


async def test_terminated_connections_under_load_lose_and_duplicate_nothing(
    postgres_url: str, admin: asyncpg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYMFONIC_TEST_WORK_SECONDS", "0.05")
    killed = 0

    async def terminate_everything(done: anyio.Event) -> None:
        nonlocal killed
        while not done.is_set():
            killed += len(
                await admin.fetch(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
            await anyio.sleep(0.1)

    load = await run_load(postgres_url, terminate_everything)
    assert killed > 0 and load.failures() > 0, "the load never met a terminated connection"


async def test_a_run_marker_skips_the_disk_wait_for_its_own_commit_only(
    admin: asyncpg.Connection,
) -> None:
    await admin.execute("CREATE TEMP TABLE symfonic_sessions (session_id text, run_id text,"
                        " run_lease timestamptz)")
    await admin.execute("INSERT INTO symfonic_sessions VALUES ('s', 'r', now())")
    statement = END_RUN[Dialect.POSTGRESQL]
    [row] = await admin.fetch(statement.positional, *statement.values({"session_id": "s",
                                                                       "run_id": "r"}))
    assert row["unsynced"] == "off"
    # SET LOCAL semantics: the connection's next commit waits for the disk again.
    assert await admin.fetchval("SHOW synchronous_commit") == "on"
    assert await admin.fetchval("SELECT run_id FROM symfonic_sessions") is None
