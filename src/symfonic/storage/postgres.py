"""The PostgreSQL adapter: asyncpg, a round trip per statement on a bounded pool, READ
COMMITTED on every transaction; docs/design.md says how it connects, retries and retires.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, TypeVar

import anyio

from symfonic.core.contracts.errors import ConfigurationError, SymfonicError
from symfonic.storage.pg_notifications import PostgresNotifications
from symfonic.storage.pg_pool import ConnectionPool
from symfonic.storage.revision import READ_REVISION, found_of, must_migrate
from symfonic.storage.sql_store import SqlStore
from symfonic.storage.statements import Dialect, Params, Row, Statement
from symfonic.storage.transactions import Body

if TYPE_CHECKING:
    import asyncpg

T = TypeVar("T")

DEFAULT_POOL_SIZE = 10
DEFAULT_POOL_TIMEOUT = 10.0
# asyncpg waits 60 s for a new connection by default; a server that is out of
# reach should fail the turn about as quickly as an exhausted pool does.
CONNECT_TIMEOUT = 10.0
# How long a connection whose operation was cancelled may take to end it on the
# server and close; past this it is dropped (the server ends the statement when
# it next notices the connection is gone).
RETIRE_TIMEOUT = 5.0
ISOLATION = "read_committed"


def _scheme_and_rest(url: str) -> str:
    scheme, _, rest = url.partition("://")
    if scheme not in {"postgresql", "postgres", "postgresql+asyncpg"}:
        raise ValueError(f"not a PostgreSQL store URL: {url!r}")
    return rest


class PostgresStore(PostgresNotifications, SqlStore):
    """``pool_size`` / ``pool_timeout`` default to ``SYMFONIC_POOL_SIZE`` /
    ``SYMFONIC_POOL_TIMEOUT`` (seconds), else 10 and 10."""

    dialect = Dialect.POSTGRESQL

    def __init__(
        self, url: str, *, pool_size: int | None = None, pool_timeout: float | None = None
    ) -> None:
        try:
            import asyncpg  # noqa: F401
        except ImportError as error:
            raise ConfigurationError(
                "the PostgreSQL store needs asyncpg: in the symfonic clone, "
                "pip install -e '.[postgres]'"
            ) from error
        rest = _scheme_and_rest(url)
        super().__init__(url)
        self._dsn = f"postgresql://{rest}"
        self._rest = rest
        self._size = pool_size or int(os.environ.get("SYMFONIC_POOL_SIZE", DEFAULT_POOL_SIZE))
        self._timeout = pool_timeout or float(
            os.environ.get("SYMFONIC_POOL_TIMEOUT", DEFAULT_POOL_TIMEOUT)
        )
        self._pool: ConnectionPool | None = None

    async def _migrate(self) -> None:
        self.schema_found, oldest_beside = await self._schema_revision()
        if not must_migrate(self.url, self.schema_found, oldest_beside):
            return
        # The migration machinery loads only for a schema that must change.
        from symfonic.storage import migrate

        await migrate.upgrade_postgres(self._rest, connect_timeout=CONNECT_TIMEOUT)

    async def _schema_revision(self) -> tuple[str | None, str | None]:
        """The schema's revision and the oldest that can run beside it, if recorded."""
        import asyncpg

        connection = await asyncpg.connect(self._dsn, timeout=CONNECT_TIMEOUT)
        try:
            row = await connection.fetchrow(READ_REVISION)
        except asyncpg.UndefinedTableError:
            return None, None
        finally:
            await connection.close()
        return found_of(row)

    async def _connect(self) -> None:
        self._pool = ConnectionPool(self._open_connection, size=self._size, timeout=self._timeout)

    async def _open_connection(self) -> asyncpg.Connection:
        import asyncpg

        connection: asyncpg.Connection = await asyncpg.connect(
            self._dsn,
            timeout=CONNECT_TIMEOUT,
            server_settings={"default_transaction_isolation": "read committed"},
        )
        return connection

    async def _run_transaction(self, body: Body[T]) -> T:
        async def in_transaction(connection: asyncpg.Connection) -> T:
            async with connection.transaction(isolation=ISOLATION):
                return await body(_Statements(connection))

        return await self._on_connection(in_transaction)

    async def _run_statement(self, body: Body[T], *, write: bool) -> T:
        async def alone(connection: asyncpg.Connection) -> T:
            return await body(_Statements(connection))

        return await self._on_connection(alone)

    async def _on_connection(self, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """``work`` on a pooled connection; again on another if the first refused it unsent."""
        try:
            async with self._connection() as connection:
                return await work(connection)
        except Exception as error:
            if not _refused_unsent(error):
                raise
        async with self._connection() as connection:
            return await work(connection)

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[asyncpg.Connection]:
        """A pooled connection; one that failed under a statement is never reused.

        A transaction's own refusals (a lost revision, a lapsed claim) leave the
        connection clean. Anything else came from the driver or the server, and a
        connection that saw it -- dropped mid-statement, interrupted, confused
        about which operation is in progress -- is closed rather than handed to
        the next turn, once its operation has ended on the server; the pool
        opens a fresh one.
        """
        pool = self._pool
        if pool is None:
            raise RuntimeError("the PostgreSQL store is not open: enter it with `async with`")
        connection = await pool.acquire()
        try:
            yield connection
        except SymfonicError:
            pool.release(connection)
            raise
        except BaseException:
            await _retire(connection)
            pool.release(connection, discard=True)
            raise
        pool.release(connection)

    async def _dispose(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()


async def _retire(connection: asyncpg.Connection) -> None:
    """Close a connection once the server has ended its operation, if that comes soon.

    asyncpg's graceful close first waits for a cancelled statement to be
    acknowledged by the server (it sent the cancel request when the task was
    cancelled), then says goodbye. Shielded, because the caller is usually
    being cancelled itself.
    """
    with anyio.CancelScope(shield=True), anyio.move_on_after(RETIRE_TIMEOUT), suppress(Exception):
        await connection.close(timeout=RETIRE_TIMEOUT)


def _refused_unsent(error: BaseException) -> bool:
    """Whether asyncpg refused a statement before executing it: its protocol was not idle.

    That happens on a connection that read an error while idle in the pool (the
    server's farewell before a restart) and has not yet seen the close that
    follows. Its message is the only mark it has ("cannot switch to state 12;
    another operation (2) is in progress"). Inside a transaction, the rollback
    that follows fails on the closed connection, and the refusal is its context.
    """
    import asyncpg

    return any(
        isinstance(each, asyncpg.InternalClientError)
        and str(each).startswith("cannot switch to state")
        for each in (error, error.__context__)
    )


class _Statements:
    """One connection's statements, each a round trip, its plan prepared once per connection."""

    __slots__ = ("_connection",)

    def __init__(self, connection: asyncpg.Connection) -> None:
        self._connection = connection

    async def rows(self, statement: Statement, params: Params) -> Sequence[Row]:
        records: list[Row] = await self._connection.fetch(
            statement.positional, *statement.values(params)
        )
        return records

    async def count(self, statement: Statement, params: Params) -> int:
        status = await self._connection.execute(statement.positional, *statement.values(params))
        # "UPDATE 3", "INSERT 0 1", "DELETE 0": the count is the last word.
        return int(status.rsplit(" ", 1)[-1])

    async def each(self, statement: Statement, params: Sequence[Params]) -> None:
        rows = [statement.values(one) for one in params]
        await self._connection.executemany(statement.positional, rows)
