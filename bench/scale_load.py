"""Many pending pauses written straight into a store's tables, for scale checks.

Building 100k pauses turn by turn through the service takes longer than a
benchmark run or a test may: this writes the rows a paused first turn leaves
(a session at revision 0 and its pending pause, checkpoint included) in one
bulk insert per table. The database's own triggers still record each pause's
creation in the feed and the pending tally, as they do for a pause recorded
through the store, and the audit trail chains an "asked" record for each (one
statement trigger per COPY on PostgreSQL: docs/audit.md has what it costs).

The principals are ``user0`` … ``user{N-1}``; every ``SCOPE_EVERY``-th pause is
addressed to the ``finance`` scope (about 12%), the others to no audience. A
layout may give every pause to one principal instead: the benchmark's
``steady``, who owns the same 60 pending pauses at every size.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import anyio

from symfonic.storage.audit_log import register_audit_hash
from symfonic.storage.sqlite_file import path_of

SCOPE = "finance"
SCOPE_EVERY = 8
STEADY = "steady"
STEADY_PAUSES = 60
# About the size of a paused payment turn's checkpoint (1,053 bytes measured).
CHECKPOINT = '{"turn":[' + ",".join(['{"role":"ai","content":"' + "x" * 90 + '"}'] * 9) + "]}"


Stamp = Callable[[datetime], object]


@dataclass(frozen=True)
class Layout:
    """Which pauses to write: ``count`` of them, from number ``start``."""

    count: int
    start: int = 0
    principals: int = 1000
    created: datetime = datetime(2030, 1, 1, tzinfo=UTC)
    expires_in: timedelta = timedelta(days=7)
    agent: str = "assistant"
    kind: str = "approval"
    # Everyone's pauses this one principal's, none to a scope.
    owner: str | None = None


def pause_id(number: int) -> str:
    """Pause ids are UUIDs in hex, as the service's signed tokens need."""
    return f"{number:032x}"


def principal_of(number: int, layout: Layout) -> str:
    return layout.owner or f"user{number % layout.principals}"


def _numbers(layout: Layout) -> Iterator[tuple[int, datetime]]:
    for number in range(layout.start, layout.start + layout.count):
        yield number, layout.created + timedelta(milliseconds=number)


def session_rows(layout: Layout, stamp: Stamp) -> list[tuple[object, ...]]:
    """The sessions' rows, ``SESSION_COLUMNS`` in order, each time through ``stamp``."""
    return [
        (f"s{n:08d}", principal_of(n, layout), layout.agent, 0, 0, "{}", stamp(at), stamp(at))
        for n, at in _numbers(layout)
    ]


def pause_rows(layout: Layout, stamp: Stamp) -> list[tuple[object, ...]]:
    """The pending pauses' rows, ``PAUSE_COLUMNS`` in order, each time through ``stamp``."""
    return [
        (
            pause_id(n),
            f"s{n:08d}",
            principal_of(n, layout),
            layout.agent,
            SCOPE if n % SCOPE_EVERY == 0 and layout.owner is None else None,
            layout.kind,
            f"approve payment {n}?",
            '{"type":"boolean"}',
            f"call_{n}",
            f"int_{n}",
            0,
            "pending",
            stamp(at),
            stamp(at + layout.expires_in),
            1,
            CHECKPOINT,
        )
        for n, at in _numbers(layout)
    ]


SESSION_COLUMNS = "session_id principal agent revision message_count metadata created_at active_at"
PAUSE_COLUMNS = (
    "pause_id session_id principal agent audience kind query response_schema tool_call_id"
    " interrupt_id base_revision state created_at expires_at checkpoint_format checkpoint"
)


def sqlite_stamp(value: datetime) -> str:
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")


def _insert(table: str, columns: str) -> str:
    names = columns.split()
    return f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"


def _load_sqlite(path: str, layout: Layout) -> None:
    connection = sqlite3.connect(path, timeout=30, isolation_level=None)
    # Each pause loaded is audited as asked, as the store's own inserts are.
    register_audit_hash(connection)
    try:
        connection.execute("BEGIN IMMEDIATE")
        connection.executemany(
            _insert("symfonic_sessions", SESSION_COLUMNS), session_rows(layout, sqlite_stamp)
        )
        connection.executemany(
            _insert("symfonic_pauses", PAUSE_COLUMNS), pause_rows(layout, sqlite_stamp)
        )
        connection.execute("COMMIT")
        # The load's own WAL is copied now, not by the store's first checkpoint
        # in the middle of what is measured next.
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()


async def _load_postgres(url: str, layout: Layout) -> None:
    import asyncpg

    dsn = "postgresql://" + url.partition("://")[2]
    connection = await asyncpg.connect(dsn)
    try:
        async with connection.transaction():
            await connection.copy_records_to_table(
                "symfonic_sessions",
                records=session_rows(layout, lambda at: at),
                columns=SESSION_COLUMNS.split(),
            )
            await connection.copy_records_to_table(
                "symfonic_pauses",
                records=pause_rows(layout, lambda at: at),
                columns=PAUSE_COLUMNS.split(),
            )
    finally:
        await connection.close()


async def load_pending(url: str, layout: Layout) -> None:
    """Write ``layout.count`` paused sessions into the store at ``url`` (already migrated)."""
    if url.startswith("sqlite"):
        await anyio.to_thread.run_sync(_load_sqlite, path_of(url), layout)
    else:
        await _load_postgres(url, layout)
