"""The embedded SQLite adapter: a file, no server, several processes at once.

Writes open with ``BEGIN IMMEDIATE`` so a transaction takes the database's write
lock before its first statement: two writers never both read and then fight to
upgrade, they queue on the lock (``busy_timeout``) instead. Every write is
therefore serialised against every other, across processes too, which is the
SQLite equivalent of the conditional updates' READ COMMITTED re-check on
PostgreSQL: a claim or publish that loses a race sees the winner's commit.

Each unit of work runs whole on a worker thread over ``sqlite3``, so a
transaction costs one hand-off from the event loop however many statements it
has, and the loop never waits on the file lock. Writers of one process share one
connection behind an in-process lock, so they queue on the event loop instead of
polling SQLite's busy handler; only writers in other processes meet
``busy_timeout``. Reads take a connection of their own and begin deferred (plain
``BEGIN``), so under WAL they go on while one writer holds the lock, and a read
of several statements sees one snapshot.

``synchronous=NORMAL`` under WAL survives a crash of any process; only a power
cut can lose the last commits.

WAL is a property of the file, switched on once when a store opens, before any
connection of the store's own: the switch needs the file to itself and, unlike a
write, answers "database is locked" at once instead of waiting, so workers
opening a fresh file at the same moment retry it until one has switched it. They
then queue on the write lock to migrate it once.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.pool import NullPool

from symfonic.core.contracts.errors import ConfigurationError
from symfonic.storage import migrate
from symfonic.storage.sql_store import SqlStore
from symfonic.storage.statements import Query, Result, Unit

BUSY_TIMEOUT_SECONDS = 30
# How SQLite holds a timestamp: UTC text that sorts as it compares (the format
# SQLAlchemy gave the schema's first databases).
STAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f"

T = TypeVar("T")


def _path_of(url: str) -> str:
    for prefix in ("sqlite+pysqlite:", "sqlite:"):
        if url.startswith(prefix):
            path = sa.engine.make_url("sqlite:" + url[len(prefix) :]).database
            if not path or path == ":memory:":
                # Every connection to an in-memory database is a database of its own.
                raise ConfigurationError(
                    f"a SQLite store needs a file, not {url!r}: use sqlite:///path.db"
                )
            return path
    raise ValueError(f"not a SQLite store URL: {url!r}")


class SqliteStore(SqlStore):
    def __init__(self, url: str) -> None:
        super().__init__(url)
        self._path = _path_of(url)
        self._writer = anyio.Lock()
        self._writer_connection: sqlite3.Connection | None = None
        self._idle_readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()

    # connections ----------------------------------------------------------

    def _open_connection(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self._path,
            timeout=BUSY_TIMEOUT_SECONDS,
            # Transactions are begun and ended here, explicitly, never by the driver.
            isolation_level=None,
            check_same_thread=False,
        )
        connection.row_factory = sqlite3.Row
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    def _write_connection(self) -> sqlite3.Connection:
        if self._writer_connection is None:
            self._writer_connection = self._open_connection()
        return self._writer_connection

    def _take_reader(self) -> sqlite3.Connection:
        with self._readers_lock:
            if self._idle_readers:
                return self._idle_readers.pop()
        return self._open_connection()

    def _give_back(self, connection: sqlite3.Connection) -> None:
        with self._readers_lock:
            self._idle_readers.append(connection)

    # units of work --------------------------------------------------------

    async def _run(self, unit: Unit[T], *, write: bool) -> T:
        if not write:
            return await anyio.to_thread.run_sync(self._read_on_thread, unit)
        async with self._writer:
            return await anyio.to_thread.run_sync(self._write_on_thread, unit)

    def _write_on_thread(self, unit: Unit[T]) -> T:
        return _in_transaction(self._write_connection(), "BEGIN IMMEDIATE", unit)

    def _read_on_thread(self, unit: Unit[T]) -> T:
        connection = self._take_reader()
        try:
            value = _in_transaction(connection, "BEGIN", unit)
        except BaseException:
            connection.close()
            raise
        self._give_back(connection)
        return value

    # lifecycle ------------------------------------------------------------

    async def _migrate(self) -> None:
        await anyio.to_thread.run_sync(_use_wal, self._path)
        await anyio.to_thread.run_sync(_migrate_file, self._path)

    async def _dispose(self) -> None:
        with self._readers_lock:
            connections, self._idle_readers = self._idle_readers, []
        if self._writer_connection is not None:
            connections.append(self._writer_connection)
            self._writer_connection = None
        for connection in connections:
            connection.close()


def _in_transaction(connection: sqlite3.Connection, begin: str, unit: Unit[T]) -> T:
    """Run ``unit`` between ``begin`` and ``COMMIT``; roll back whatever it left half done."""
    connection.execute(begin)
    try:
        value = _drive(connection, unit)
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    return value


def _drive(connection: sqlite3.Connection, unit: Unit[T]) -> T:
    cursor = connection.cursor()
    try:
        query = next(unit)
        while True:
            query = unit.send(_execute(cursor, query))
    except StopIteration as stop:
        value: T = stop.value
        return value
    finally:
        unit.close()
        cursor.close()


def _execute(cursor: sqlite3.Cursor, query: Query) -> Result:
    statement = query.statement
    if query.many is not None:
        cursor.executemany(statement.text, [_bound(params) for params in query.many])
        return Result((), cursor.rowcount)
    cursor.execute(statement.text, _bound(query.params))
    if statement.fetches:
        rows = cursor.fetchall()
        return Result(rows, len(rows))
    return Result((), cursor.rowcount)


def _bound(params: Mapping[str, Any]) -> dict[str, Any]:
    return {
        name: _stamp(value) if isinstance(value, datetime) else value
        for name, value in params.items()
    }


def _stamp(value: datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.strftime(STAMP_FORMAT)


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


def _migrate_file(path: str) -> None:
    """Bring the schema to head inside one ``BEGIN IMMEDIATE``: one migrator at a time."""
    engine = sa.create_engine(
        "sqlite+pysqlite:///" + path,
        connect_args={"timeout": BUSY_TIMEOUT_SECONDS},
        poolclass=NullPool,
    )

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin(connection: sa.Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    try:
        with engine.begin() as connection:
            migrate.upgrade(connection)
    finally:
        engine.dispose()
