"""The embedded SQLite adapter: writes on the loop's own connection under `BEGIN IMMEDIATE`,
moved to a thread when another process holds the lock; docs/design.md says why.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TypeVar

import anyio

from symfonic.storage.audit_log import register_audit_hash
from symfonic.storage.failures import cannot_write
from symfonic.storage.revision import must_migrate
from symfonic.storage.sql_store import SqlStore
from symfonic.storage.sqlite_checkpoints import Checkpointer
from symfonic.storage.sqlite_file import (
    optimize,
    path_of,
    schema_revision,
    synchronous_of,
    use_wal,
)
from symfonic.storage.sqlite_statements import Inline, Locked, OnThread, inline_transaction, rows_of
from symfonic.storage.statements import Dialect, Params, Row, Statement
from symfonic.storage.transactions import Body

BUSY_TIMEOUT_SECONDS = 30
# Bytes of WAL file kept when the log starts over, for a checkpoint that could
# not truncate it (another process reading an old snapshot): SQLite's writer
# cuts the file back to this instead of leaving it at its largest.
WAL_SIZE_LIMIT = 16 * 1024 * 1024
# Statistics (``optimize``) when a store opens, then at most this often, beside
# a checkpoint, on its thread.
OPTIMIZE_EVERY_SECONDS = 3600.0
# Before the next batch of background work (a sweep's, a prune's), the file is
# left to other writers for at least this long.
BACKGROUND_REST_SECONDS = 0.03
T = TypeVar("T")


class SqliteStore(SqlStore):
    dialect = Dialect.SQLITE

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self._path = path_of(url)
        self._synchronous = synchronous_of(url)
        self._inline: sqlite3.Connection | None = None
        self._optimized_at = time.monotonic()
        self._background_rest_until = 0.0
        self._checkpoints = self._checkpointer()
        # Writers that found the file locked by another process, queued in order.
        self._waiting = anyio.Lock()
        self._waiting_writer: sqlite3.Connection | None = None
        self._idle_readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        # The watch of run events: its connection, the data version and newest id it saw.
        self._versions: sqlite3.Connection | None = None
        self._version, self._newest = -1, 0

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
        register_audit_hash(connection)
        connection.execute(f"PRAGMA synchronous={self._synchronous}")
        connection.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
        return connection

    def _open_inline(self) -> sqlite3.Connection:
        connection = self._open_connection()
        # No busy wait on the loop: a lock held elsewhere is waited for on a
        # thread. No checkpoints on the loop either: they write the database
        # file and sync it, so a thread runs one every CHECKPOINT_EVERY commits.
        connection.execute("PRAGMA wal_autocheckpoint=0")
        optimize(connection)
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

    # transactions -------------------------------------------------------

    async def _run_transaction(self, body: Body[T]) -> T:
        return await self._emptying_the_wal(partial(self._transaction_once, body))

    async def _run_unsynced(self, body: Body[T]) -> T:
        return await self._emptying_the_wal(partial(self._transaction_once, body, synced=False))

    async def _run_statement(self, body: Body[T], *, write: bool) -> T:
        if not write:
            return await self._statement_once(body, write=False)
        return await self._emptying_the_wal(partial(self._statement_once, body, write=True))

    async def _emptying_the_wal(self, write: Callable[[], Awaitable[T]]) -> T:
        """``write``; run once more if the disk was full and a checkpoint then emptied
        the WAL (the likeliest thing filling it) and left room, so that costs a
        checkpoint, not a turn.

        The write was rolled back whole, and a transaction's body may be run again.
        """
        await self._checkpoints.before_write()
        try:
            return await write()
        except sqlite3.OperationalError as error:
            if cannot_write(error) is None or not await self._checkpoints.now():
                raise
        return await write()

    async def _transaction_once(self, body: Body[T], synced: bool = True) -> T:
        if not self._waiting.locked():  # else a writer of ours waits for the lock: queue
            connection = self._inline_connection()
            if connection.in_transaction:
                raise RuntimeError("a transaction on the loop's connection suspended")
            if not synced:  # WAL's NORMAL: the next FULL commit syncs this one too
                connection.execute("PRAGMA synchronous=NORMAL")
            locked = False
            try:
                value = await inline_transaction(connection, body)
            except Locked:
                locked = True  # rolled back: run it again where the lock can be waited for
            finally:
                if not synced:
                    connection.execute(f"PRAGMA synchronous={self._synchronous}")
            if not locked:
                await self._checkpoints.committed()
                return value
        async with self._waiting:
            value = await self._transaction_on_thread(body)
        await self._checkpoints.committed()
        return value

    async def _statement_once(self, body: Body[T], *, write: bool) -> T:
        # One statement is a transaction by itself: no BEGIN and COMMIT around it.
        if not (write and self._waiting.locked()):
            try:
                value = await body(Inline(self._inline_connection()))
            except Locked:
                pass  # nothing ran: run it where the lock can be waited for
            else:
                if write:
                    await self._checkpoints.committed()
                return value
        if write:
            async with self._waiting:
                value = await body(OnThread(await self._writer()))
            await self._checkpoints.committed()
            return value
        return await self._read_on_thread(body)

    async def _run_background(self, body: Body[T]) -> T:
        """Background work on a thread, queued with the loop's writers that wait.

        Between two batches the file is left to other writers for as long as
        the last batch held it, and at least ``BACKGROUND_REST_SECONDS``: a
        writer of another process polls for the lock at most every 25 ms in its
        first 128 ms of waiting, so it gets in between two batches where
        back-to-back batches would starve it.
        """
        await anyio.sleep(max(0.0, self._background_rest_until - anyio.current_time()))
        async with self._waiting:
            started = anyio.current_time()
            try:
                value = await self._transaction_on_thread(body)
            finally:
                ended = anyio.current_time()
                rest = max(ended - started, BACKGROUND_REST_SECONDS)
                self._background_rest_until = ended + rest
        await self._checkpoints.committed()
        return value

    async def _run_converted(
        self, statement: Statement, params: Params, convert: Callable[[Sequence[Row]], T]
    ) -> T:
        def read_and_convert() -> T:
            connection = self._take_reader()
            try:
                value = convert(rows_of(connection, statement, params))
            except BaseException:
                connection.close()
                raise
            self._give_back(connection)
            return value

        return await anyio.to_thread.run_sync(read_and_convert)

    async def _writer(self) -> sqlite3.Connection:
        """The connection that waits for another process's write lock, on a thread."""
        if self._waiting_writer is None:
            self._waiting_writer = await anyio.to_thread.run_sync(self._open_connection)
        return self._waiting_writer

    async def _transaction_on_thread(self, body: Body[T]) -> T:
        connection = await self._writer()
        try:
            await anyio.to_thread.run_sync(connection.execute, "BEGIN IMMEDIATE")
            value = await body(OnThread(connection))
            await anyio.to_thread.run_sync(connection.execute, "COMMIT")
        except BaseException:
            with anyio.CancelScope(shield=True):
                if connection.in_transaction:
                    await anyio.to_thread.run_sync(connection.execute, "ROLLBACK")
            raise
        return value

    async def _read_on_thread(self, body: Body[T]) -> T:
        connection = await anyio.to_thread.run_sync(self._take_reader)
        try:
            value = await body(OnThread(connection))
        except BaseException:
            connection.close()
            raise
        self._give_back(connection)
        return value

    async def _newest_run_event(self) -> int:
        """As any store's, but read again only once a commit (on any connection but
        its own) moved ``PRAGMA data_version`` on the watch's connection: a check of
        a few microseconds on the loop, every poll, while anyone watches."""
        if self._versions is None:
            self._versions = await anyio.to_thread.run_sync(self._open_connection)
        version = self._versions.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version:
            self._version, self._newest = version, await super()._newest_run_event()
        return self._newest

    def _write_refused(self, reason: str) -> None:
        self._checkpoints.write_refused(reason)

    def _checkpointer(self) -> Checkpointer:
        return Checkpointer(self._path, self._open_connection, after=self._statistics)

    def _statistics(self, connection: sqlite3.Connection) -> None:
        """Beside a checkpoint, on its thread: statistics, at most every hour."""
        if time.monotonic() - self._optimized_at > OPTIMIZE_EVERY_SECONDS:
            self._optimized_at = time.monotonic()
            optimize(connection)

    # lifecycle ------------------------------------------------------------

    async def _migrate(self) -> None:
        await anyio.to_thread.run_sync(use_wal, self._path, BUSY_TIMEOUT_SECONDS)
        found = await anyio.to_thread.run_sync(schema_revision, self._path, BUSY_TIMEOUT_SECONDS)
        self.schema_found = found[0]
        if not must_migrate(self.url, *found):
            return
        # The migration machinery loads only for a schema that must change.
        from symfonic.storage import migrate

        upgrade = partial(migrate.upgrade_sqlite, busy_timeout=BUSY_TIMEOUT_SECONDS)
        await anyio.to_thread.run_sync(upgrade, self._path)

    async def _connect(self) -> None:
        self._checkpoints = self._checkpointer()
        # Opened on a thread: setting a fresh connection up may wait for the lock.
        self._inline = await anyio.to_thread.run_sync(self._open_inline)

    async def _dispose(self) -> None:
        await anyio.to_thread.run_sync(self._checkpoints.close)
        with self._readers_lock:
            connections, self._idle_readers = self._idle_readers, []
        for connection in (self._inline, self._waiting_writer, self._versions):
            if connection is not None:
                connections.append(connection)
        self._inline = self._waiting_writer = self._versions = None
        for connection in connections:
            connection.close()
