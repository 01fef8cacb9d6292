"""The embedded SQLite adapter: a file, no server, several processes at once.

Writes open with ``BEGIN IMMEDIATE`` so a transaction takes the database's write
lock before its first statement: two writers never both read and then fight to
upgrade, they queue on the lock (``busy_timeout``) instead. Every write is
therefore serialised against every other, across processes too, which is the
SQLite equivalent of the conditional updates' READ COMMITTED re-check on
PostgreSQL: a claim or publish that loses a race sees the winner's commit.

Each unit of work runs whole on a worker thread, so a transaction costs one
hand-off from the event loop however many statements it has, and the loop never
waits on the file lock. Writers of one process take an in-process lock first, so
they queue on the event loop instead of polling SQLite's busy handler; only
writers in other processes meet ``busy_timeout``. Reads begin deferred (plain
``BEGIN``), so under WAL they go on while one writer holds the lock.

``synchronous=NORMAL`` under WAL survives a crash of any process; only a power
cut can lose the last commits.

WAL is a property of the file, switched on once when a store opens, before its
pool connects: the switch needs the file to itself and, unlike a write, answers
"database is locked" at once instead of waiting, so workers opening a fresh file
at the same moment retry it until one has switched it. They then queue on the
write lock to migrate it once.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any, TypeVar

import anyio
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from symfonic.storage.sql_store import SqlStore
from symfonic.storage.transactions import Work

BUSY_TIMEOUT_SECONDS = 30
# Execution option marking a connection that only reads (it begins deferred).
READ_ONLY = "symfonic_read_only"

T = TypeVar("T")


def _sync_url(url: str) -> str:
    for prefix in ("sqlite+pysqlite:", "sqlite:"):
        if url.startswith(prefix):
            return "sqlite+pysqlite:" + url[len(prefix) :]
    raise ValueError(f"not a SQLite store URL: {url!r}")


class SqliteStore(SqlStore):
    def __init__(self, url: str) -> None:
        super().__init__(url)
        engine = sa.create_engine(
            _sync_url(url),
            connect_args={"timeout": BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
        )

        @event.listens_for(engine, "connect")
        def _connect(dbapi_connection: Any, _record: Any) -> None:
            # Take transaction control from the driver so "begin" below decides.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_SECONDS * 1000}")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _begin(connection: sa.Connection) -> None:
            read_only = connection.get_execution_options().get(READ_ONLY, False)
            connection.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")

        self._engine = engine
        self._reader = engine.execution_options(**{READ_ONLY: True})
        self._writer = anyio.Lock()
        self._path = engine.url.database

    async def _prepare(self) -> None:
        if self._path and self._path != ":memory:":
            await anyio.to_thread.run_sync(_use_wal, self._path)

    async def _run(self, work: Work[T], *, write: bool) -> T:
        if not write:
            return await anyio.to_thread.run_sync(self._in_transaction, self._reader, work)
        async with self._writer:
            return await anyio.to_thread.run_sync(self._in_transaction, self._engine, work)

    @staticmethod
    def _in_transaction(engine: sa.Engine, work: Work[T]) -> T:
        with engine.begin() as conn:
            return work(conn)

    async def _dispose(self) -> None:
        await anyio.to_thread.run_sync(self._engine.dispose)

    def _insert_ignore(self, table: sa.Table, keys: list[str]) -> Any:
        return sqlite_insert(table).on_conflict_do_nothing(index_elements=keys)


def _use_wal(path: str) -> None:
    """Switch the file to WAL, retrying while another opener holds it."""
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
    try:
        while True:
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
    finally:
        connection.close()
