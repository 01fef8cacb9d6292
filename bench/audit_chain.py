"""``python -m bench.audit_chain``: what the audit trail's chain costs PostgreSQL's writers.

Each figure on a database of its own (docs/audit.md has them and what they mean):

- one sweep statement expiring 500, 2,000, then 8,000 pending pauses (the store's own
  expiry statement, one transaction), with the audit triggers of migration
  0015 (a row trigger that moved the chain's head row twice per record) and
  with today's (a statement trigger that moves it once per statement), and
  the same on SQLite;
- pauses created per second by 16 connections at once, each pause one
  transaction of one ``INSERT``, each connection a principal of its own (so
  they share no pending tally row), with the audit trigger on and off: a
  creation holds the head row's lock until it commits, so this is the ceiling
  the one chain puts on writers;
- a bulk load of 50,000 pauses by ``COPY`` in one transaction, the audit's
  "asked" trigger on and off.

Each figure is the median of ``--rounds`` runs. The server is
``$BENCH_POSTGRES_URL`` (else the local test server); its user may create databases.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import asyncpg

from bench.scale_load import (
    AUDIT_ASKED,
    PAUSE_COLUMNS,
    SESSION_COLUMNS,
    Layout,
    load_pending,
    pause_rows,
    session_rows,
    sqlite_stamp,
)
from bench.stores import DEFAULT_POSTGRES_URL, fresh_store
from symfonic.storage import open_store
from symfonic.storage.audit_log import register_audit_hash
from symfonic.storage.pause_writes import EXPIRE
from symfonic.storage.sqlite_file import path_of
from symfonic.storage.statements import Dialect

CREATED = datetime(2030, 1, 1, tzinfo=UTC)
BEFORE = "0017"  # the row triggers' last revision
WRITERS = 16
# The live feed's trigger, which notifies listeners of each new pause (migration 0004).
FEED_CREATED = "symfonic_pause_created"


def _dsn(url: str) -> str:
    return "postgresql://" + url.partition("://")[2]


async def _at_revision(url: str, revision: str | None) -> None:
    """Migrate the new database to head, then down to ``revision`` if one is given."""
    async with open_store(url):
        pass
    if revision is None:
        return
    from alembic import command
    from alembic.config import Config
    from sqlalchemy.ext.asyncio import create_async_engine

    from symfonic.storage.migrate import SCRIPT_LOCATION

    def downgrade(connection: object) -> None:
        config = Config()
        config.set_main_option("script_location", SCRIPT_LOCATION)
        config.attributes["connection"] = connection
        command.downgrade(config, revision)

    engine = create_async_engine("postgresql+asyncpg://" + url.partition("://")[2])
    try:
        async with engine.begin() as connection:
            await connection.run_sync(downgrade)
    finally:
        await engine.dispose()


async def _copy(connection: asyncpg.Connection, layout: Layout) -> None:
    stamp: Callable[[datetime], object] = lambda at: at  # noqa: E731
    await connection.copy_records_to_table(
        "symfonic_sessions", records=session_rows(layout, stamp), columns=SESSION_COLUMNS.split()
    )
    await connection.copy_records_to_table(
        "symfonic_pauses", records=pause_rows(layout, stamp), columns=PAUSE_COLUMNS.split()
    )


async def _load(url: str, layout: Layout, *, audited: bool) -> float:
    """Seconds to COPY ``layout``'s pauses in one transaction."""
    connection = await asyncpg.connect(_dsn(url))
    try:
        started = time.perf_counter()
        async with connection.transaction():
            if not audited:
                await connection.execute(
                    f"ALTER TABLE symfonic_pauses DISABLE TRIGGER {AUDIT_ASKED}"
                )
            await _copy(connection, layout)
            if not audited:
                await connection.execute(
                    f"ALTER TABLE symfonic_pauses ENABLE TRIGGER {AUDIT_ASKED}"
                )
        return time.perf_counter() - started
    finally:
        await connection.close()


async def _expiry(url: str, rows: int, round_: int, *, trigger: bool = False) -> float:
    """Seconds one expiry statement takes to move ``rows`` pending pauses, committed;
    with ``trigger``, the seconds its audit trigger took, as ``EXPLAIN ANALYZE`` says."""
    layout = Layout(count=rows, start=round_ * rows, created=CREATED, expires_in=timedelta(hours=1))
    await _load(url, layout, audited=False)
    expire = EXPIRE[Dialect.POSTGRESQL]
    params = expire.values({"now": CREATED + timedelta(days=1), "batch": rows})
    connection = await asyncpg.connect(_dsn(url))
    try:
        # Statistics as autovacuum would have them, as in production.
        await connection.execute("ANALYZE symfonic_pauses")
        if trigger:
            async with connection.transaction():
                plan = await connection.fetchval(
                    f"EXPLAIN (ANALYZE, FORMAT JSON) {expire.positional}", *params
                )
            return _trigger_seconds(plan, "symfonic_audit_changed")
        started = time.perf_counter()
        async with connection.transaction():
            moved = await connection.execute(expire.positional, *params)
        elapsed = time.perf_counter() - started
    finally:
        await connection.close()
    assert moved == f"UPDATE {rows}", moved
    return elapsed


def _trigger_seconds(plan: str, name: str) -> float:
    (explained,) = json.loads(plan)
    (fired,) = [t for t in explained["Triggers"] if t["Trigger Name"] == name]
    return float(fired["Time"]) / 1000


async def _sqlite_expiry(url: str, rows: int, round_: int) -> float:
    """The same on SQLite, whose row triggers update the head row in place."""
    layout = Layout(count=rows, start=round_ * rows, created=CREATED, expires_in=timedelta(hours=1))
    await load_pending(url, layout)
    connection = sqlite3.connect(path_of(url), isolation_level=None)
    register_audit_hash(connection)
    try:
        started = time.perf_counter()
        connection.execute("BEGIN IMMEDIATE")
        params = {"now": sqlite_stamp(CREATED + timedelta(days=1)), "batch": rows}
        moved = connection.execute(EXPIRE[Dialect.SQLITE].text, params).rowcount
        connection.execute("COMMIT")
        elapsed = time.perf_counter() - started
    finally:
        connection.close()
    assert moved == rows, moved
    return elapsed


async def _creations(url: str, seconds: float, round_: int, *, off: tuple[str, ...]) -> float:
    """Pauses created per second by ``WRITERS`` connections, one transaction each."""
    connections = [await asyncpg.connect(_dsn(url)) for _ in range(WRITERS)]
    names = PAUSE_COLUMNS.split()
    insert = (
        f"INSERT INTO symfonic_pauses ({', '.join(names)})"
        f" VALUES ({', '.join(f'${i + 1}' for i in range(len(names)))})"
    )
    made = [0] * WRITERS
    try:
        for trigger in off:
            await connections[0].execute(f"ALTER TABLE symfonic_pauses DISABLE TRIGGER {trigger}")
        deadline = time.perf_counter() + seconds

        async def write(i: int) -> None:
            number = (round_ * WRITERS + i + 1) * 10_000_000
            while time.perf_counter() < deadline:
                layout = Layout(count=1, start=number + made[i], owner=f"writer{i}")
                (row,) = pause_rows(layout, lambda at: at)
                await connections[i].execute(insert, *row)
                made[i] += 1

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for i in range(WRITERS):
                group.start_soon(write, i)
        return sum(made) / (time.perf_counter() - started)
    finally:
        for connection in connections:
            await connection.close()


async def _median(rounds: int, one: Callable[[int], Awaitable[float]]) -> float:
    return statistics.median([await one(r) for r in range(rounds)])


def _on_fresh(
    server: str, name: str, revision: str | None, work: Callable[[str], Awaitable[float]]
) -> float:
    with tempfile.TemporaryDirectory() as folder, fresh_store(server, Path(folder), name) as url:

        async def run() -> float:
            await _at_revision(url, revision)
            return await work(url)

        return anyio.run(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--load", type=int, default=50_000)
    args = parser.parse_args()
    server = os.environ.get("BENCH_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    triggers = {"row triggers (0015)": BEFORE, "statement triggers": None}
    for rows in (500, 2_000, 8_000):
        for label, revision in triggers.items():
            seconds = _on_fresh(
                server,
                "bench_audit_expiry",
                revision,
                lambda url, rows=rows: _median(args.rounds, lambda r: _expiry(url, rows, r)),
            )
            print(f"expire {rows:,} in one statement, {label}: {seconds * 1000:,.0f} ms")
            seconds = _on_fresh(
                server,
                "bench_audit_expiry",
                revision,
                lambda url, rows=rows: _median(
                    args.rounds, lambda r: _expiry(url, rows, r, trigger=True)
                ),
            )
            print(f"  of which the audit trigger, {label}: {seconds * 1000:,.0f} ms")
        seconds = _on_fresh(
            "sqlite",
            "bench_audit_expiry",
            None,
            lambda url, rows=rows: _median(args.rounds, lambda r: _sqlite_expiry(url, rows, r)),
        )
        print(f"expire {rows:,} in one statement, SQLite: {seconds * 1000:,.0f} ms")
    for label, revision, off in (
        ("audit row trigger (0015)", BEFORE, ()),
        ("audit statement trigger", None, ()),
        ("audit trigger off", None, (AUDIT_ASKED,)),
        ("the feed's trigger off", None, (FEED_CREATED,)),
        ("audit trigger and the feed's off", None, (AUDIT_ASKED, FEED_CREATED)),
    ):
        rate = _on_fresh(
            server,
            "bench_audit_writers",
            revision,
            lambda url, off=off: _median(
                args.rounds, lambda r: _creations(url, args.seconds, r, off=off)
            ),
        )
        print(f"pauses created/s by {WRITERS} connections, {label}: {rate:,.0f}")
    layout = Layout(count=args.load, created=CREATED)
    for audited in (True, False):
        seconds = _on_fresh(
            server,
            "bench_audit_copy",
            None,
            lambda url, audited=audited: _load(url, layout, audited=audited),
        )
        state = "on" if audited else "off"
        print(f"COPY {args.load:,} pauses, audit trigger {state}: {seconds:,.2f} s")


if __name__ == "__main__":
    main()
