"""The embedded SQLite adapter: a file, no server, several processes at once.

Writes open with ``BEGIN IMMEDIATE`` so a transaction takes the database's write
lock before its first statement: two writers never both read and then fight to
upgrade, they queue on the lock (``busy_timeout``) instead. Every write is
therefore serialised against every other, across processes too, which is the
SQLite equivalent of the conditional updates' READ COMMITTED re-check on
PostgreSQL: a claim or publish that loses a race sees the winner's commit.

Units of work run on the event loop's own thread, over one ``sqlite3``
connection, from ``BEGIN`` to ``COMMIT`` without a pause: a transaction of a
cycle costs less on the loop than handing it to a worker thread and back
(docs/internals.md), and no other coroutine can run between its
statements, so writers of one process never meet each other on the lock. The
loop never *waits* on the file, though. That connection has no busy timeout:
when another process holds the write lock (or, rarely, a reader's lock is
refused), the unit is handed, before any of it has run, to a worker thread whose
connection waits up to ``busy_timeout``; writers of this process that come
meanwhile queue behind it on the loop. Checkpoints, the only step that writes
the database file and syncs it, are off the loop too: the loop's connection
never checkpoints, and every ``CHECKPOINT_EVERY`` commits a worker thread runs
one that empties the WAL (see :meth:`SqliteStore._checkpoint`), so the WAL
holds at most the commits since the last one, however long the load lasts.

A read is one statement, which under WAL goes on while another process holds
the write lock; the rare read refused its snapshot is retried on a thread, in a
deferred (plain ``BEGIN``) transaction. The reads a step needs with its write
(a turn's history, a claimed pause's checkpoint) are in the write's own
statement, or its transaction.

``synchronous=NORMAL`` under WAL survives a crash of any process; only a power
cut can lose the last commits.

WAL is switched on once when a store opens, before any connection of the
store's own (:mod:`symfonic.storage.sqlite_file`). A file already at the
schema's head revision is then ready; any other is migrated (see
:mod:`symfonic.storage.migrate`), once, the workers queueing on its write lock.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

import anyio

from symfonic.core.contracts.errors import ConfigurationError
from symfonic.storage.history_statements import history_after_the_step
from symfonic.storage.revision import SCHEMA_HEAD
from symfonic.storage.sql_store import SqlStore
from symfonic.storage.sqlite_file import schema_revision, use_wal
from symfonic.storage.statements import Query, Result, Unit, one

BUSY_TIMEOUT_SECONDS = 30
# SQLITE_BUSY and SQLITE_LOCKED: another connection holds the lock.
BUSY_CODES = frozenset({5, 6})
# Commits on the loop between two checkpoints (about SQLite's own default of
# 1,000 WAL pages at a cycle's few pages per commit).
CHECKPOINT_EVERY = 256
# Bytes of WAL file kept when the log starts over, for a checkpoint that could
# not truncate it (another process reading an old snapshot): SQLite's writer
# cuts the file back to this instead of leaving it at its largest.
WAL_SIZE_LIMIT = 16 * 1024 * 1024
T = TypeVar("T")

logger = logging.getLogger(__name__)


def _path_of(url: str) -> str:
    """The file a ``sqlite:///relative.db`` or ``sqlite:////absolute.db`` URL names."""
    for prefix in ("sqlite+pysqlite:", "sqlite:"):
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            path = rest[3:] if rest.startswith("///") else ""
            path = path.partition("?")[0]
            if not path or path == ":memory:":
                # Every connection to an in-memory database is a database of its own.
                raise ConfigurationError(
                    f"a SQLite store needs a file, not {url!r}: use sqlite:///path.db"
                )
            return path
    raise ValueError(f"not a SQLite store URL: {url!r}")


def _history(session: str, revision: str) -> str:
    """A session's bodies up to a revision, joined by commas (NULL when there are none).

    SQLite before 3.44 has no ORDER BY inside an aggregate. It feeds an
    aggregate the rows of an ordered subquery in their order, and never
    flattens such a subquery into it (rule 16 of its query flattener). The
    brackets are added by the caller: ``'[' || … || ']'`` in SQL copies the
    whole text twice more and takes twice as long as the aggregate itself.
    """
    return (
        "(SELECT group_concat(body, ',')"
        " FROM (SELECT m.body FROM symfonic_messages m"
        f" WHERE m.session_id = {session} AND m.revision <= {revision} ORDER BY m.seq))"
    )


class SqliteStore(SqlStore):
    HISTORIES = history_after_the_step(_history)

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self._path = _path_of(url)
        self._inline: sqlite3.Connection | None = None
        self._commits = 0
        self._checkpointing = False
        # Writers that found the file locked by another process, queued in order.
        self._waiting = anyio.Lock()
        self._waiting_writer: sqlite3.Connection | None = None
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
        connection.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
        return connection

    def _open_inline(self) -> sqlite3.Connection:
        connection = self._open_connection()
        # No busy wait on the loop: a lock held elsewhere is waited for on a
        # thread. No checkpoints on the loop either: they write the database
        # file and sync it, so a thread runs one every CHECKPOINT_EVERY commits.
        connection.execute("PRAGMA wal_autocheckpoint=0")
        connection.execute("PRAGMA busy_timeout=0")
        return connection

    def _inline_connection(self) -> sqlite3.Connection:
        if self._inline is None:
            raise RuntimeError("the SQLite store is not open: enter it with `async with`")
        return self._inline

    def _take_reader(self) -> sqlite3.Connection:
        with self._readers_lock:
            if self._idle_readers:
                return self._idle_readers.pop()
        return self._open_connection()

    def _give_back(self, connection: sqlite3.Connection) -> None:
        with self._readers_lock:
            self._idle_readers.append(connection)

    # units of work --------------------------------------------------------

    async def _run(self, unit: Unit[T]) -> T:
        def inline(connection: sqlite3.Connection) -> T:
            return _transaction(connection, unit, write=True, inline=True)

        return await self._on_the_loop(inline, unit, write=True)

    async def _run_one(self, query: Query, *, write: bool) -> Result:
        # One statement is a transaction by itself: no BEGIN and COMMIT around it.
        def inline(connection: sqlite3.Connection) -> Result:
            return _autocommit(connection, query)

        return await self._on_the_loop(inline, one(query), write=write)

    async def _on_the_loop(
        self, inline: Callable[[sqlite3.Connection], T], unit: Unit[T], *, write: bool
    ) -> T:
        """``inline`` on the loop's connection; ``unit`` on a thread if the file is locked."""
        if write and self._waiting.locked():
            # A writer of this process is already waiting for the lock: queue behind it.
            return await self._write_waiting(unit, None)
        try:
            value = inline(self._inline_connection())
        except _Locked as locked:
            if write:
                return await self._write_waiting(unit, locked.pending)
            return await anyio.to_thread.run_sync(self._read_on_thread, unit, locked.pending)
        if write:
            await self._count_commit()
        return value

    async def _write_waiting(self, unit: Unit[T], pending: Query | None) -> T:
        async with self._waiting:
            return await anyio.to_thread.run_sync(self._write_on_thread, unit, pending)

    def _write_on_thread(self, unit: Unit[T], pending: Query | None) -> T:
        if self._waiting_writer is None:
            self._waiting_writer = self._open_connection()
        return _transaction(self._waiting_writer, unit, write=True, pending=pending)

    def _read_on_thread(self, unit: Unit[T], pending: Query | None) -> T:
        connection = self._take_reader()
        try:
            value = _transaction(connection, unit, write=False, pending=pending)
        except BaseException:
            connection.close()
            raise
        self._give_back(connection)
        return value

    async def _count_commit(self) -> None:
        self._commits += 1
        if self._commits >= CHECKPOINT_EVERY and not self._checkpointing:
            self._commits = 0
            self._checkpointing = True
            try:
                # The write has committed: its caller must learn so, cancelled or not.
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self._checkpoint)
            finally:
                self._checkpointing = False

    def _checkpoint(self) -> None:
        """Copy every committed WAL page into the database file and empty the WAL.

        A passive checkpoint waits for nobody, so under steady writes it always
        ends behind the newest commit, and SQLite starts a WAL over only once a
        checkpoint has caught up: the file grows for as long as the load lasts.
        ``TRUNCATE`` waits here, on a worker thread, for the write lock and for
        readers of older snapshots (both brief), copies everything and cuts the
        file to zero. The loop's writers that arrive meanwhile find the lock
        taken and wait for it on a thread, as they do for another process.
        """
        connection = self._take_reader()
        try:
            busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy:
                logger.debug("a checkpoint could not empty the WAL; the next one tries again")
        except sqlite3.OperationalError:
            # Another process is checkpointing; the next turn of the count tries again.
            logger.debug("a checkpoint was refused", exc_info=True)
        finally:
            self._give_back(connection)

    # lifecycle ------------------------------------------------------------

    async def _migrate(self) -> None:
        await anyio.to_thread.run_sync(use_wal, self._path, BUSY_TIMEOUT_SECONDS)
        revision = await anyio.to_thread.run_sync(
            schema_revision, self._path, BUSY_TIMEOUT_SECONDS
        )
        if revision == SCHEMA_HEAD:
            return
        # The migration machinery loads only for a schema that must change.
        from symfonic.storage import migrate

        upgrade = partial(migrate.upgrade_sqlite, busy_timeout=BUSY_TIMEOUT_SECONDS)
        await anyio.to_thread.run_sync(upgrade, self._path)

    async def _connect(self) -> None:
        # Opened on a thread: setting a fresh connection up may wait for the lock.
        self._inline = await anyio.to_thread.run_sync(self._open_inline)

    async def _dispose(self) -> None:
        with self._readers_lock:
            connections, self._idle_readers = self._idle_readers, []
        for connection in (self._inline, self._waiting_writer):
            if connection is not None:
                connections.append(connection)
        self._inline = self._waiting_writer = None
        for connection in connections:
            connection.close()


class _Locked(Exception):
    """The lock a unit needs is held by another connection; nothing has run yet.

    ``pending`` is the unit's first query when it was the one refused (a read's
    first statement takes its snapshot), else ``None`` (a write's ``BEGIN
    IMMEDIATE`` was refused before the unit started).
    """

    def __init__(self, pending: Query | None) -> None:
        super().__init__("locked")
        self.pending = pending


def _is_busy(error: sqlite3.OperationalError) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    # Extended codes (SQLITE_BUSY_RECOVERY, …) carry the primary code in the low byte.
    return code is not None and code & 0xFF in BUSY_CODES


def _autocommit(connection: sqlite3.Connection, query: Query) -> Result:
    """Run one statement on its own; a lock held elsewhere raises :class:`_Locked`."""
    try:
        return _execute(connection, query)
    except sqlite3.OperationalError as error:
        if _is_busy(error):
            raise _Locked(None) from error
        raise


def _transaction(
    connection: sqlite3.Connection,
    unit: Unit[T],
    *,
    write: bool,
    inline: bool = False,
    pending: Query | None = None,
) -> T:
    """Run ``unit`` in one transaction, committed whole or rolled back.

    ``inline``: a lock held elsewhere raises :class:`_Locked` instead of waiting,
    while nothing has run yet. ``pending``: the unit's first query, already taken
    from it by an inline attempt that was refused.
    """
    try:
        connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    except sqlite3.OperationalError as error:
        if inline and _is_busy(error):
            raise _Locked(None) from error
        raise
    try:
        query = next(unit) if pending is None else pending
        try:
            result = _execute(connection, query)
        except sqlite3.OperationalError as error:
            if inline and _is_busy(error):
                raise _Locked(query) from error
            raise
        value = _drive(unit, connection, result)
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    return value


def _drive(unit: Unit[T], connection: sqlite3.Connection, result: Result) -> T:
    """Feed ``result`` to the unit, then run each query it asks for, to its return value."""
    try:
        while True:
            result = _execute(connection, unit.send(result))
    except StopIteration as stop:
        value: T = stop.value
        return value
    finally:
        unit.close()


def _execute(connection: sqlite3.Connection, query: Query) -> Result:
    statement = query.statement
    if query.many is not None:
        cursor = connection.executemany(statement.text, [_bound(params) for params in query.many])
        return Result((), cursor.rowcount)
    cursor = connection.execute(statement.text, _bound(query.params))
    if statement.fetches:
        rows = cursor.fetchall()
        return Result(rows, len(rows))
    return Result((), cursor.rowcount)


def _bound(params: Mapping[str, Any]) -> Mapping[str, Any]:
    """The parameters with every timestamp as SQLite holds it (most statements have none)."""
    for value in params.values():
        if isinstance(value, datetime):
            break
    else:
        return params
    return {
        name: _stamp(value) if isinstance(value, datetime) else value
        for name, value in params.items()
    }


def _stamp(value: datetime) -> str:
    """UTC text that sorts as it compares, ``YYYY-MM-DD HH:MM:SS.ffffff``.

    The format SQLAlchemy gave the schema's first databases.
    """
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.isoformat(" ", "microseconds")
