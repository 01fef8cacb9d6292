"""One database connection discipline for both adapters: transactions, failures, start-up.

Every port method is one unit of work: a plain function of a synchronous
SQLAlchemy connection, run whole by ``_write`` (one transaction, committed whole
or rolled back) or ``_read``. The adapter decides how a unit runs -- on a worker
thread for SQLite, on the event loop through SQLAlchemy's greenlet bridge for
PostgreSQL -- so a transaction costs one hand-off, not one per statement.

A driver failure inside either is mapped once, here, to
:class:`StoreUnavailable` (see :mod:`symfonic.storage.failures`) after the
rollback, so a method that failed has written nothing and the caller sees one
error type whatever the driver. Connections come from the engine's pool and go
back to it at the end of the method; no method holds one while it waits for
another, so a pool of size N serves any number of concurrent turns, queueing
them, and never deadlocks on itself.

Opening the store brings the schema to head under the adapter's migration lock
and reads (or creates) the database's token secret the same way on every worker.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Self, TypeVar

import anyio
import sqlalchemy as sa

from symfonic.core.contracts.errors import StoreUnavailable
from symfonic.storage import migrate
from symfonic.storage.failures import is_unavailable
from symfonic.storage.schema import meta

SECRET_KEY = "pause_token_secret"
# Delays between attempts of a cleanup while the store is unavailable; after
# CLEANUP_SECONDS it is given up and left to the sweeper and the lease.
CLEANUP_RETRY_DELAYS = (0.1, 0.25, 0.5, 1.0, 2.0)
CLEANUP_SECONDS = 5.0

T = TypeVar("T")
Work = Callable[[sa.Connection], T]
"""One unit of work: everything a port method does, on one connection."""


class SqlTransactions:
    """How units of work run, the failures they map, and the schema and secret."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._secret: bytes | None = None

    # what an adapter provides -------------------------------------------------

    async def _run(self, work: Work[T], *, write: bool) -> T:
        """Run ``work`` in one transaction (``write``) or one read."""
        raise NotImplementedError

    async def _run_one(self, statement: sa.Executable) -> int:
        """Run one writing statement, which is a transaction by itself; its row count.

        By default it is a unit of work like any other; an adapter may skip the
        explicit ``BEGIN``/``COMMIT`` around it.
        """
        return await self._run(lambda conn: _rowcount(conn, statement), write=True)

    async def _dispose(self) -> None:
        raise NotImplementedError

    def _lock_for_migrations(self, conn: sa.Connection) -> None:
        """Serialise concurrent migrations; the adapter's write lock suffices by default."""

    def _insert_ignore(self, table: sa.Table, keys: list[str]) -> Any:
        """``INSERT … ON CONFLICT DO NOTHING`` in the adapter's dialect."""
        raise NotImplementedError

    # lifecycle ------------------------------------------------------------

    async def __aenter__(self) -> Self:
        try:
            with _explained("cannot be opened"):
                await self._prepare()
            await self._write(self._migrate)
        except BaseException:
            await self._dispose()
            raise
        return self

    async def _prepare(self) -> None:
        """Whatever the database file needs before the pool connects; nothing by default."""

    async def __aexit__(self, *exc: object) -> None:
        await self._dispose()

    def _migrate(self, conn: sa.Connection) -> None:
        self._lock_for_migrations(conn)
        migrate.upgrade(conn)

    async def _write(self, work: Work[T]) -> T:
        """One write transaction: committed whole, or rolled back and explained."""
        with _explained("could not complete a write"):
            return await self._run(work, write=True)

    async def _write_one(self, statement: sa.Executable) -> int:
        """One statement that is its own transaction (a conditional update); its row count."""
        with _explained("could not complete a write"):
            return await self._run_one(statement)

    async def _read(self, work: Work[T]) -> T:
        with _explained("could not answer a read"):
            return await self._run(work, write=False)

    async def _cleanup(self, statement: sa.Executable) -> int:
        """Run one idempotent cleanup statement, retried while the store is unavailable.

        Cleanups (abandoning a failed turn's claim, clearing its run marker) run
        right after a failure, often the store's own: retrying them for a few
        seconds rides out a dropped connection or a restart, so the row does not
        wait for a lease to lapse. Each is a conditional update keyed by the
        caller's own claim or run id, so running it twice is running it once.
        Returns the row count.
        """

        deadline = anyio.current_time() + CLEANUP_SECONDS
        for delay in (*CLEANUP_RETRY_DELAYS, None):
            try:
                return await self._write_one(statement)
            except StoreUnavailable:
                if delay is None or anyio.current_time() + delay > deadline:
                    raise
                await anyio.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def ping(self) -> None:
        await self._read(lambda conn: conn.execute(sa.text("SELECT 1")).scalar())

    async def signing_secret(self) -> bytes:
        """The database's secret: the first worker's insert wins, everyone reads it back.

        ``INSERT … ON CONFLICT DO NOTHING`` waits for a concurrent inserter of the
        same key to commit and then does nothing; the ``SELECT`` after it, a new
        statement under READ COMMITTED, sees the winner's row.
        """
        if self._secret is not None:
            return self._secret

        def create_or_read(conn: sa.Connection) -> bytes:
            conn.execute(
                self._insert_ignore(meta, ["key"]).values(
                    key=SECRET_KEY, value=secrets.token_bytes(32)
                )
            )
            query = sa.select(meta.c.value).where(meta.c.key == SECRET_KEY)
            return bytes(conn.execute(query).scalar_one())

        self._secret = await self._write(create_or_read)
        return self._secret


def _rowcount(conn: sa.Connection, statement: sa.Executable) -> int:
    return int(conn.execute(statement).rowcount)


@contextmanager
def _explained(failure: str) -> Iterator[None]:
    """Map a driver failure that means "out of reach" to ``StoreUnavailable``, once."""
    try:
        yield
    except Exception as error:
        if is_unavailable(error):
            raise StoreUnavailable(f"the store {failure}: {_reason(error)}") from error
        raise


def _reason(error: BaseException) -> str:
    orig = getattr(error, "orig", None)
    return f"{type(error).__name__}: {orig if orig is not None else error}"
