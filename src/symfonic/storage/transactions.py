"""One database connection discipline for both adapters: transactions, failures, start-up.

Every port method runs inside exactly one ``_write`` (a transaction, committed
whole or rolled back) or one ``_read``. A driver failure inside either is mapped
once, here, to :class:`StoreUnavailable` (see :mod:`symfonic.storage.failures`)
after the rollback, so a method that failed has written nothing and the caller
sees one error type whatever the driver. Connections come from the engine's
pool and go back to it at the end of the method; no method holds one while it
waits for another, so a pool of size N serves any number of concurrent turns,
queueing them, and never deadlocks on itself.

Opening the store brings the schema to head under the adapter's migration lock
and reads (or creates) the database's token secret the same way on every worker.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Self

import anyio
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from symfonic.core.contracts.errors import StoreUnavailable
from symfonic.storage import migrate
from symfonic.storage.failures import is_unavailable
from symfonic.storage.schema import meta

SECRET_KEY = "pause_token_secret"
# Delays between attempts of a cleanup while the store is unavailable; after
# CLEANUP_SECONDS it is given up and left to the sweeper and the lease.
CLEANUP_RETRY_DELAYS = (0.1, 0.25, 0.5, 1.0, 2.0)
CLEANUP_SECONDS = 5.0
# Execution option marking a connection that only reads (SQLite begins it deferred).
READ_ONLY = "symfonic_read_only"


class SqlTransactions:
    """The engine, its transactions, and the schema and secret every worker shares."""

    def __init__(self, url: str, engine: AsyncEngine) -> None:
        self.url = url
        self._engine = engine
        self._reader = engine.execution_options(**{READ_ONLY: True})
        self._secret: bytes | None = None

    # lifecycle ------------------------------------------------------------

    async def __aenter__(self) -> Self:
        try:
            await self._prepared()
            async with self._write() as conn:
                await self._lock_for_migrations(conn)
                await conn.run_sync(migrate.upgrade)
        except BaseException:
            await self._engine.dispose()
            raise
        return self

    async def _prepared(self) -> None:
        try:
            await self._prepare()
        except Exception as error:
            if is_unavailable(error):
                raise StoreUnavailable(f"the store cannot be opened: {_reason(error)}") from error
            raise

    async def __aexit__(self, *exc: object) -> None:
        await self._engine.dispose()

    async def _prepare(self) -> None:
        """Whatever the database file needs before the pool connects; nothing by default."""

    async def _lock_for_migrations(self, conn: AsyncConnection) -> None:
        """Serialise concurrent migrations; the adapter's write lock suffices by default."""

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        """One write transaction: committed whole, or rolled back and explained."""
        try:
            async with self._engine.begin() as conn:
                yield conn
        except Exception as error:
            if is_unavailable(error):
                raise StoreUnavailable(
                    f"the store could not complete a write: {_reason(error)}"
                ) from error
            raise

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        try:
            async with self._reader.connect() as conn:
                yield conn
        except Exception as error:
            if is_unavailable(error):
                raise StoreUnavailable(
                    f"the store could not answer a read: {_reason(error)}"
                ) from error
            raise

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
                async with self._write() as conn:
                    return int((await conn.execute(statement)).rowcount)
            except StoreUnavailable:
                if delay is None or anyio.current_time() + delay > deadline:
                    raise
                await anyio.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def ping(self) -> None:
        async with self._read() as conn:
            await conn.execute(sa.text("SELECT 1"))

    async def signing_secret(self) -> bytes:
        """The database's secret: the first worker's insert wins, everyone reads it back.

        ``INSERT … ON CONFLICT DO NOTHING`` waits for a concurrent inserter of the
        same key to commit and then does nothing; the ``SELECT`` after it, a new
        statement under READ COMMITTED, sees the winner's row.
        """
        if self._secret is not None:
            return self._secret
        async with self._write() as conn:
            await conn.execute(
                self._insert_ignore(meta, ["key"]).values(
                    key=SECRET_KEY, value=secrets.token_bytes(32)
                )
            )
            value = (
                await conn.execute(sa.select(meta.c.value).where(meta.c.key == SECRET_KEY))
            ).scalar_one()
        self._secret = bytes(value)
        return self._secret

    def _insert_ignore(self, table: sa.Table, keys: list[str]) -> Any:
        """``INSERT … ON CONFLICT DO NOTHING`` in the adapter's dialect."""
        raise NotImplementedError


def _reason(error: BaseException) -> str:
    orig = getattr(error, "orig", None)
    return f"{type(error).__name__}: {orig if orig is not None else error}"
