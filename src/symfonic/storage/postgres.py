"""The PostgreSQL adapter: many workers on many hosts, one service.

asyncpg under a SQLAlchemy pool. The isolation level is READ COMMITTED, set on
every connection rather than trusted to the server's default, and it is enough:
every race goes through one conditional ``UPDATE`` (see
:mod:`symfonic.storage.sql_store`), which re-evaluates its ``WHERE`` on the
newest version of the row it locks, so of N concurrent claims exactly one sees
``pending``.

The pool is bounded (``pool_size``, no overflow): a worker never opens more than
that many connections, whatever its concurrency, and a turn that waits longer
than ``pool_timeout`` for one fails with ``StoreUnavailable``. Connections are
checked before use (``pool_pre_ping``), so after a dropped connection or a
server restart the next checkout reconnects: the restart costs the turns that
were in flight, not the worker.
"""

from __future__ import annotations

import os
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import create_async_engine

from symfonic.core.contracts.errors import ConfigurationError
from symfonic.storage.sql_store import SqlStore
from symfonic.storage.transactions import Work

T = TypeVar("T")

# An arbitrary constant shared by every symfonic worker: the advisory lock that
# makes concurrent start-ups run the migrations once.
MIGRATION_LOCK = 0x5F4D_1C01
DEFAULT_POOL_SIZE = 10
DEFAULT_POOL_TIMEOUT = 10.0
# asyncpg waits 60 s for a new connection by default; a server that is out of
# reach should fail the turn about as quickly as an exhausted pool does.
CONNECT_TIMEOUT = 10.0


def _async_url(url: str) -> str:
    scheme, _, rest = url.partition("://")
    if scheme not in {"postgresql", "postgres", "postgresql+asyncpg"}:
        raise ValueError(f"not a PostgreSQL store URL: {url!r}")
    return f"postgresql+asyncpg://{rest}"


class PostgresStore(SqlStore):
    """``pool_size`` / ``pool_timeout`` default to ``SYMFONIC_POOL_SIZE`` /
    ``SYMFONIC_POOL_TIMEOUT`` (seconds), else 10 and 10."""

    def __init__(
        self, url: str, *, pool_size: int | None = None, pool_timeout: float | None = None
    ) -> None:
        try:
            import asyncpg  # noqa: F401
        except ImportError as error:
            raise ConfigurationError(
                "the PostgreSQL store needs asyncpg: pip install 'symfonic[postgres]'"
            ) from error
        size = pool_size or int(os.environ.get("SYMFONIC_POOL_SIZE", DEFAULT_POOL_SIZE))
        timeout = pool_timeout or float(
            os.environ.get("SYMFONIC_POOL_TIMEOUT", DEFAULT_POOL_TIMEOUT)
        )
        engine = create_async_engine(
            _async_url(url),
            pool_size=size,
            max_overflow=0,
            pool_timeout=timeout,
            # One round trip per checkout (about a third of a turn's time on a
            # local server) buys surviving a restart without failing a turn;
            # SYMFONIC_POOL_PRE_PING=0 trades that for speed on a stable network.
            pool_pre_ping=os.environ.get("SYMFONIC_POOL_PRE_PING", "1") != "0",
            isolation_level="READ COMMITTED",
            connect_args={"timeout": CONNECT_TIMEOUT},
        )
        super().__init__(url)
        self._engine = engine
        # Reads need no transaction of their own: each statement sees committed
        # data, and skipping BEGIN/ROLLBACK saves two round trips per read.
        self._reader = engine.execution_options(isolation_level="AUTOCOMMIT")

    async def _run(self, work: Work[T], *, write: bool) -> T:
        # run_sync drives the synchronous unit over asyncpg on this event loop.
        if write:
            async with self._engine.begin() as conn:
                return await conn.run_sync(work)
        async with self._reader.connect() as conn:
            return await conn.run_sync(work)

    async def _run_one(self, statement: sa.Executable) -> int:
        # A single statement is atomic by itself: autocommit spares the
        # BEGIN and COMMIT round trips around it.
        async with self._reader.connect() as conn:
            return int((await conn.execute(statement)).rowcount)

    async def _dispose(self) -> None:
        await self._engine.dispose()

    def _lock_for_migrations(self, conn: sa.Connection) -> None:
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})

    def _insert_ignore(self, table: sa.Table, keys: list[str]) -> Any:
        return pg_insert(table).on_conflict_do_nothing(index_elements=keys)
