"""One connection discipline for both adapters: transactions, failures, start-up.

Every port method is one transaction (:meth:`SqlTransactions.transaction`: an
``async`` function of a :class:`Connection`, committed whole or rolled back) or
one statement, which is a transaction by itself (``write_rows``, ``write_count``,
``read_rows``). The adapter decides how they run -- over ``sqlite3`` on the
event loop, or on a thread while another process holds the lock; over
``asyncpg``, a round trip per statement.

A driver failure inside either is mapped once, here, to
:class:`StoreUnavailable` (see :mod:`symfonic.storage.failures`) after the
rollback, so a method that failed has written nothing and the caller sees one
error type whatever the driver. Connections go back to the adapter at the end of
the method; no method holds one while it waits for another, so a pool of size N
serves any number of concurrent turns, queueing them, and never deadlocks on
itself.

A transaction's body only reads and writes through its connection: an adapter
may roll it back before it commits and run it again from the start (SQLite does,
when the lock it needs turns out to be held by another process).

Opening the store brings the schema to head (see :mod:`symfonic.storage.migrate`;
a database already there costs one query) and reads (or creates) the
database's token secret the same way on every worker.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import ClassVar, Protocol, Self, TypeVar

import anyio

from symfonic.core.contracts.errors import StoreCannotWrite, StoreUnavailable
from symfonic.storage.failures import cannot_write, is_unavailable
from symfonic.storage.owed_cleanups import OwedWrites
from symfonic.storage.statements import Dialect, Params, Row, Statement

SECRET_KEY = "pause_token_secret"
# Delays between attempts of a cleanup while the store is unavailable; after
# CLEANUP_SECONDS it is given up and left to the sweeper and the lease.
CLEANUP_RETRY_DELAYS = (0.1, 0.25, 0.5, 1.0, 2.0)
CLEANUP_SECONDS = 5.0

CREATE_SECRET = Statement(
    "INSERT INTO symfonic_meta (key, value) VALUES (:key, :value) ON CONFLICT (key) DO NOTHING"
)
READ_SECRET = Statement("SELECT value FROM symfonic_meta WHERE key = :key")
PING = Statement("SELECT 1 AS one")
# Whether writes work again after a lasting failure: a write about the size of a
# turn's (64 KiB), since a full disk may still take a page or two in space a
# failed write left, and the health check must not call that recovered.
PROBE_KEY = "write_probe"
PROBE_BYTES = 64 * 1024
PROBE_WRITE = Statement(
    "INSERT INTO symfonic_meta (key, value) VALUES (:key, :value) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)

T = TypeVar("T")


class Connection(Protocol):
    """A connection inside one transaction; the caller says what each statement returns."""

    async def rows(self, statement: Statement, params: Params) -> Sequence[Row]:
        """The rows the statement hands back (a ``SELECT``, or a ``RETURNING`` list)."""
        ...

    async def count(self, statement: Statement, params: Params) -> int:
        """How many rows the statement inserted, updated or deleted."""
        ...

    async def each(self, statement: Statement, params: Sequence[Params]) -> None:
        """The statement once per parameter set, as one step (an ``executemany``)."""
        ...


Body = Callable[[Connection], Awaitable[T]]


class SqlTransactions:
    """How transactions run, the failures they map, and the schema and secret."""

    dialect: ClassVar[Dialect]

    def __init__(self, url: str) -> None:
        self.url = url
        self._secret: bytes | None = None
        # Why the last write failed for a lasting reason (a full disk), until one commits.
        self.write_failure: str | None = None
        # Cleanups that could not be written when due; the sweep runs them again.
        self.owed = OwedWrites()

    # what an adapter provides -------------------------------------------------

    async def _run_transaction(self, body: Body[T]) -> T:
        """Run ``body`` in one write transaction."""
        raise NotImplementedError

    async def _run_statement(self, body: Body[T], *, write: bool) -> T:
        """Run ``body``, one statement, as a transaction by itself (no ``BEGIN``/``COMMIT``)."""
        raise NotImplementedError

    async def _run_background(self, body: Body[T]) -> T:
        """Run ``body``, background work, in one write transaction (by default, as any)."""
        return await self._run_transaction(body)

    async def _run_converted(
        self, statement: Statement, params: Params, convert: Callable[[Sequence[Row]], T]
    ) -> T:
        """Run one read and convert its rows (by default, as any read)."""

        async def rows(connection: Connection) -> Sequence[Row]:
            return await connection.rows(statement, params)

        return convert(await self._run_statement(rows, write=False))

    async def _migrate(self) -> None:
        """Bring the schema to head, once however many workers open at the same moment."""
        raise NotImplementedError

    async def _connect(self) -> None:
        """Whatever the adapter does before its first transaction; nothing by default."""

    async def _dispose(self) -> None:
        raise NotImplementedError

    def _write_refused(self, reason: str) -> None:
        """A write failed for a lasting reason; an adapter may start what recovers it."""

    # lifecycle ------------------------------------------------------------

    async def __aenter__(self) -> Self:
        try:
            with _explained("cannot be opened"):
                await self._migrate()
                await self._connect()
        except BaseException:
            await self._dispose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._dispose()

    async def transaction(self, body: Body[T]) -> T:
        """One write transaction: committed whole, or rolled back and explained."""
        return await self._written(lambda: self._run_transaction(body))

    async def background_transaction(self, body: Body[T]) -> T:
        """A transaction of background work (a sweep's batch, a prune's): off the loop.

        Like :meth:`transaction`; an adapter whose transactions run on the
        event loop runs these elsewhere, so a batch never stalls a request.
        """
        return await self._written(lambda: self._run_background(body))

    async def read_converted(
        self, statement: Statement, params: Params, convert: Callable[[Sequence[Row]], T]
    ) -> T:
        """One read and ``convert`` of its rows; where reads run on the loop, neither does.

        For reads of many rows at once (a batch of the change record), whose
        conversion costs more than the read.
        """
        with _explained("could not answer a read"):
            return await self._run_converted(statement, params, convert)

    async def write_rows(self, statement: Statement, params: Params) -> Sequence[Row]:
        """One write that is its own transaction, and the rows it returns."""

        async def rows(connection: Connection) -> Sequence[Row]:
            return await connection.rows(statement, params)

        return await self._written(lambda: self._run_statement(rows, write=True))

    async def write_count(self, statement: Statement, params: Params) -> int:
        """One write that is its own transaction (a conditional update), and its row count."""

        async def count(connection: Connection) -> int:
            return await connection.count(statement, params)

        return await self._written(lambda: self._run_statement(count, write=True))

    async def _written(self, write: Callable[[], Awaitable[T]]) -> T:
        """``write``, explained; a lasting refusal is kept as :attr:`write_failure`
        until a write commits again, so the health check can say why."""
        try:
            with _explained("could not complete a write"):
                value = await write()
        except StoreCannotWrite as error:
            self.write_failure = error.reason
            self._write_refused(error.reason)
            raise
        self.write_failure = None
        return value

    async def read_rows(self, statement: Statement, params: Params) -> Sequence[Row]:
        async def rows(connection: Connection) -> Sequence[Row]:
            return await connection.rows(statement, params)

        with _explained("could not answer a read"):
            return await self._run_statement(rows, write=False)

    async def cleanup(self, statement: Statement, params: Params) -> int:
        """Run one idempotent cleanup statement, retried while the store is unavailable.

        Cleanups (abandoning a failed turn's claim, clearing its run marker) run
        right after a failure, often the store's own: retrying them for a few
        seconds rides out a dropped connection or a restart, so the row does not
        wait for a lease to lapse. Each is a conditional update keyed by the
        caller's own claim or run id, so running it twice is running it once.
        Returns the row count.
        """
        return await self._retried(lambda: self.write_count(statement, params))

    async def cleanup_transaction(self, body: Body[T]) -> T:
        """An idempotent cleanup of several statements, retried as :meth:`cleanup` is."""
        return await self._retried(lambda: self.transaction(body))

    async def _retried(self, attempt: Callable[[], Awaitable[T]]) -> T:
        deadline = anyio.current_time() + CLEANUP_SECONDS
        for delay in (*CLEANUP_RETRY_DELAYS, None):
            try:
                return await attempt()
            except StoreCannotWrite:
                raise  # lasts until someone frees the disk: seconds of retries only delay
            except StoreUnavailable:
                if delay is None or anyio.current_time() + delay > deadline:
                    raise
                await anyio.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def ping(self) -> None:
        """The store answers; while its last write failed for a lasting reason, a probe
        write must commit too (else :class:`StoreCannotWrite` says why)."""
        await self.read_rows(PING, {})
        if self.write_failure is not None:
            probe = {"key": PROBE_KEY, "value": secrets.token_bytes(PROBE_BYTES)}
            await self.write_count(PROBE_WRITE, probe)

    async def signing_secret(self) -> bytes:
        """The database's secret: the first worker's insert wins, everyone reads it back.

        ``INSERT … ON CONFLICT DO NOTHING`` waits for a concurrent inserter of the
        same key to commit and then does nothing; the ``SELECT`` after it, a new
        statement under READ COMMITTED, sees the winner's row.
        """
        if self._secret is not None:
            return self._secret

        async def create_or_read(connection: Connection) -> bytes:
            await connection.count(
                CREATE_SECRET, {"key": SECRET_KEY, "value": secrets.token_bytes(32)}
            )
            (row,) = await connection.rows(READ_SECRET, {"key": SECRET_KEY})
            return bytes(row["value"])

        self._secret = await self.transaction(create_or_read)
        return self._secret


@contextmanager
def _explained(failure: str) -> Iterator[None]:
    """Map a driver failure that means "out of reach" to ``StoreUnavailable``, once."""
    try:
        yield
    except Exception as error:
        lasting = cannot_write(error)
        if lasting is not None:
            message = f"the store {failure}: {lasting} ({_reason(error)})"
            raise StoreCannotWrite(message, reason=lasting) from error
        if is_unavailable(error):
            raise StoreUnavailable(f"the store {failure}: {_reason(error)}") from error
        raise


def _reason(error: BaseException) -> str:
    orig = getattr(error, "orig", None)
    return f"{type(error).__name__}: {orig if orig is not None else error}"
