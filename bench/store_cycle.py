"""Pause-and-resume cycles per second of one in-process agent, variants interleaved.

A narrower instrument than ``python -m bench``: one process, fresh sessions
(history 0), one at a time or ``--concurrency`` at once, the benchmark's own
scripted model and gated tool, and the variants measured in alternating blocks
on the same store, so a
machine whose speed drifts (the shared development VM does) moves them alike.
Besides cycles per second (wall clock) it reports the process's own CPU time
per cycle, which other work on the machine disturbs much less.
It measures store-side choices the matrix cannot toggle::

    python -m bench.store_cycle --store sqlite --variant as-is,read
    python -m bench.store_cycle --store postgresql://postgres@127.0.0.1:5432/test

Variants: ``as-is`` (the code as it is), ``read`` (a resume always reads the
pause before claiming it, where the code has a claim that skips the read),
``transactions`` (on PostgreSQL, recording a first turn's pause and publishing a
resumed turn run as SQLite's transactions of several statements instead of one
statement each), ``synced`` (on PostgreSQL, the run marker's commit waits for
the disk like every other write), ``asyncpg-pool`` (on PostgreSQL, connections
come from asyncpg's own pool, default settings, instead of the store's),
``no-outbox-trigger`` (the webhook outbox's trigger on the record of pause
changes dropped for the block: what owing webhooks costs a cycle when nobody
subscribes, one probe of an empty table per change).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from bench.history import TOOL_NAME, USER_MESSAGE
from bench.probes.pg_admin import create_database, database_url, drop_database
from bench.workloads.scripted_model import ScriptedToolModel
from bench.workloads.symfonic_workload import PRINCIPAL, send_payment


class _AsTransactions:
    """A store whose several-row transitions take SQLite's form: a transaction."""

    def __init__(self, store: Any) -> None:
        from symfonic.storage.statements import Dialect

        self.dialect = Dialect.SQLITE
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@contextmanager
def _as_transactions() -> Iterator[None]:
    from symfonic.storage import pause_writes

    record, publish = pause_writes.record_pause, pause_writes.publish_resume

    async def record_pause(store: Any, new: Any) -> None:
        await record(_AsTransactions(store), new)

    async def publish_resume(store: Any, published: Any) -> int:
        return await publish(_AsTransactions(store), published)

    pause_writes.record_pause, pause_writes.publish_resume = record_pause, publish_resume
    try:
        yield
    finally:
        pause_writes.record_pause, pause_writes.publish_resume = record, publish


@contextmanager
def _synced() -> Iterator[None]:
    """PostgreSQL's run marker committed as every other write is: waiting for the disk."""
    from symfonic.storage import runs
    from symfonic.storage.history import postgres_history
    from symfonic.storage.statements import Dialect, Statement

    history = postgres_history("symfonic_sessions.session_id", "symfonic_sessions.revision")
    unsynced = runs.BEGIN_RUN[Dialect.POSTGRESQL]
    runs.BEGIN_RUN[Dialect.POSTGRESQL] = Statement(f"{runs._BEGIN_RUN}, {history} AS history")
    try:
        yield
    finally:
        runs.BEGIN_RUN[Dialect.POSTGRESQL] = unsynced


class _AsyncpgPool:
    """asyncpg's own pool behind the interface of the store's pool."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self._releases: set[asyncio.Future[None]] = set()

    async def acquire(self) -> Any:
        return await self._pool.acquire()

    def release(self, connection: Any, *, discard: bool = False) -> None:
        if discard:
            connection.terminate()
        # asyncpg's release is a coroutine (it resets the connection first).
        self._releases.add(task := asyncio.ensure_future(self._pool.release(connection)))
        task.add_done_callback(self._releases.discard)


@contextmanager
def _asyncpg_pool(agent: Any, pools: dict[int, _AsyncpgPool]) -> Iterator[None]:
    store = agent.store
    if not hasattr(store, "_pool"):
        raise SystemExit("variant 'asyncpg-pool' needs a PostgreSQL store")
    own = store._pool
    store._pool = pools[id(store)]
    try:
        yield
    finally:
        store._pool = own


OUTBOX_TRIGGER = "no-outbox-trigger"


@asynccontextmanager
async def _outbox_trigger(agent: Any, name: str) -> AsyncIterator[None]:
    """The outbox's trigger dropped while a ``no-outbox-trigger`` block runs."""
    if name != OUTBOX_TRIGGER:
        yield
        return
    import importlib

    from symfonic.storage.statements import Dialect, Statement

    migration = importlib.import_module("symfonic.storage.migrations.versions.0005_webhook_outbox")
    store = getattr(agent.store, "inner", agent.store)
    postgres = store.dialect is Dialect.POSTGRESQL
    drop = "DROP TRIGGER symfonic_pause_change_webhooks" + (
        " ON symfonic_pause_events" if postgres else ""
    )
    create = migration.POSTGRES_TRIGGERS[1] if postgres else migration.SQLITE_TRIGGERS[0]

    async def run(sql: str) -> None:
        async def body(connection: Any) -> None:
            await connection.rows(Statement(sql), {})

        await store.transaction(body)

    await run(drop)
    try:
        yield
    finally:
        await run(create)


@contextmanager
def _variant(name: str, agent: Any, pools: dict[int, _AsyncpgPool]) -> Iterator[None]:
    if name == "asyncpg-pool":
        with _asyncpg_pool(agent, pools):
            yield
        return
    if name in ("as-is", OUTBOX_TRIGGER):
        yield
        return
    if name == "transactions":
        with _as_transactions():
            yield
        return
    if name == "synced":
        with _synced():
            yield
        return
    if name != "read":
        raise SystemExit(f"unknown variant {name!r}")
    from symfonic.turns import resume

    original = getattr(resume, "claim_unread", None)
    if original is None:
        raise SystemExit("this code has no claim without a read: variant 'read' is 'as-is'")

    async def never(*args: Any, **kwargs: Any) -> None:
        return None

    resume.claim_unread = never  # type: ignore[attr-defined]
    try:
        yield
    finally:
        resume.claim_unread = original  # type: ignore[attr-defined]


async def _cycles(agent: Any, session_id: str, count: int) -> tuple[float, float]:
    """Cycles per second, and this process's CPU microseconds per cycle."""
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        paused = await agent.run(message=USER_MESSAGE, session_id=session_id, principal=PRINCIPAL)
        token = paused.pause.token
        done = await agent.resume(token, {"decision": "approve"}, principal=PRINCIPAL)
        if done.status != "complete":
            raise SystemExit(f"a resume ended {done.status!r}")
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    return count / seconds, cpu_seconds / count * 1e6


async def _concurrent(agent: Any, concurrency: int, count: int) -> tuple[float, float]:
    """``count`` cycles on each of ``concurrency`` fresh sessions at once (history 0)."""
    sessions = [await agent.create_session(principal=PRINCIPAL) for _ in range(concurrency)]
    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(_cycles(agent, session_id, count) for session_id in sessions))
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    total = count * concurrency
    return total / seconds, cpu_seconds / total * 1e6


async def _measure(
    store: str, variants: list[str], blocks: int, cycles: int, concurrency: int
) -> None:
    from symfonic import SymfonicAgent

    agent = SymfonicAgent(
        name="bench",
        model=ScriptedToolModel(),
        tools=[send_payment],
        approval={TOOL_NAME},
        store=store,
    )
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    pools: dict[int, _AsyncpgPool] = {}
    async with AsyncExitStack() as stack:
        opened = await stack.enter_async_context(agent)
        if "asyncpg-pool" in variants:
            import asyncpg

            pool = await asyncpg.create_pool(
                store.replace("postgresql+asyncpg://", "postgresql://"),
                min_size=1,
                max_size=10,
                server_settings={"default_transaction_isolation": "read committed"},
            )
            stack.push_async_callback(pool.close)
            pools[id(opened.store)] = _AsyncpgPool(pool)
        for name in variants:  # warm-up, each variant on a session of its own
            async with _outbox_trigger(opened, name):
                with _variant(name, opened, pools):
                    session = await opened.create_session(principal=PRINCIPAL)
                    await _cycles(opened, session, 50)
        gc.freeze()
        for block in range(blocks):
            order = variants if block % 2 == 0 else list(reversed(variants))
            for name in order:
                # Fresh sessions per block: history 0 stays history 0.
                async with _outbox_trigger(opened, name):
                    with _variant(name, opened, pools):
                        figures[name].append(await _concurrent(opened, concurrency, cycles))
    for name, values in figures.items():
        rates = [rate for rate, _ in values]
        cpu = statistics.median(micros for _, micros in values)
        print(
            f"{name:17} median {statistics.median(rates):7.1f} cycles/s"
            f"  (min {min(rates):.1f}, max {max(rates):.1f}, {len(rates)} blocks)"
            f"  client CPU {cpu:6.0f} us/cycle"
        )


def _postgres_database(url: str) -> tuple[str, Callable[[], None]]:
    """A throwaway database beside ``url``'s, and how to drop it."""
    name = f"store_cycle_{uuid.uuid4().hex[:8]}"
    create_database(url, name)
    return database_url(url, name), lambda: drop_database(url, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--store", default="sqlite", help="sqlite, or a postgresql:// URL")
    parser.add_argument(
        "--variant",
        default="as-is",
        help=f"comma-separated: as-is, read, transactions, synced, asyncpg-pool, {OUTBOX_TRIGGER}",
    )
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--cycles", type=int, default=200, help="cycles per session per block")
    parser.add_argument("--concurrency", type=int, default=1, help="sessions cycling at once")
    options = parser.parse_args()
    variants = options.variant.split(",")
    if options.store == "sqlite":
        with tempfile.TemporaryDirectory() as directory:
            url = f"sqlite:///{Path(directory) / 'cycle.db'}"
            asyncio.run(
                _measure(url, variants, options.blocks, options.cycles, options.concurrency)
            )
        return
    url, drop = _postgres_database(options.store)
    try:
        asyncio.run(_measure(url, variants, options.blocks, options.cycles, options.concurrency))
    finally:
        drop()


if __name__ == "__main__":
    main()
