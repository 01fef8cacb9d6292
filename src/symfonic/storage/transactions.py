"""One connection discipline for both adapters: every port method is one named transaction
or statement, a span inside a trace; a driver failure is mapped once, after the rollback, to
`StoreUnavailable`. A body only uses its connection: an adapter may run it again (SQLite).
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, Protocol, Self, TypeVar

import anyio

from symfonic.core.contracts.errors import StoreCannotWrite, StoreUnavailable
from symfonic.core.telemetry import store_spans
from symfonic.core.telemetry.instruments import recording
from symfonic.core.telemetry.logs import PauseLog
from symfonic.core.telemetry.store_spans import Then
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
        self.pause_log = PauseLog()
        # Whether an SDK records, decided when the store opens: else no span costs a thing.
        self.traced = False
        # The schema revision found on opening, before any migration (None: no schema).
        self.schema_found: str | None = None

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

    async def _run_unsynced(self, body: Body[T]) -> T:
        """Run ``body`` in one write transaction whose commit need not wait for the disk."""
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
        self.traced = recording()
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

    async def transaction(
        self,
        body: Body[T],
        operation: str,
        attributes: Mapping[str, Any] | None = None,
        then: Then[T] | None = None,
    ) -> T:
        """One write transaction for ``operation``: committed whole, or rolled back and
        explained. In a span, ``then`` describes the result on it."""
        return await self._traced(
            operation, lambda: self._written(lambda: self._run_transaction(body)), attributes, then
        )

    async def unsynced_transaction(self, body: Body[T], operation: str) -> T:
        """A transaction whose commit need not wait for the disk (on PostgreSQL, say so in
        its first statement: ``UNSYNCED``). A crash of the process loses none of it, one
        of the machine may, until the next commit that waits, which makes every commit
        before it durable too. For rows only a replay reads."""
        return await self._traced(
            operation, lambda: self._written(lambda: self._run_unsynced(body))
        )

    async def background_transaction(self, body: Body[T], operation: str) -> T:
        """A transaction of background work (a sweep's batch, a prune's): an adapter whose
        transactions run on the event loop runs these elsewhere."""
        return await self._traced(
            operation, lambda: self._written(lambda: self._run_background(body))
        )

    async def read_converted(
        self,
        statement: Statement,
        params: Params,
        convert: Callable[[Sequence[Row]], T],
        operation: str,
    ) -> T:
        """One read and ``convert`` of its rows, neither on the loop where reads run there:
        for reads of many rows, whose conversion costs more than the read."""

        async def read() -> T:
            with _explained("could not answer a read"):
                return await self._run_converted(statement, params, convert)

        return await self._traced(operation, read)

    async def write_rows(
        self,
        statement: Statement,
        params: Params,
        operation: str,
        attributes: Mapping[str, Any] | None = None,
        then: Then[Sequence[Row]] | None = None,
    ) -> Sequence[Row]:
        """One write that is its own transaction, and the rows it returns."""

        async def rows(connection: Connection) -> Sequence[Row]:
            return await connection.rows(statement, params)

        return await self._traced(
            operation,
            lambda: self._written(lambda: self._run_statement(rows, write=True)),
            attributes,
            then,
        )

    async def write_count(
        self,
        statement: Statement,
        params: Params,
        operation: str,
        attributes: Mapping[str, Any] | None = None,
    ) -> int:
        """One write that is its own transaction (a conditional update), and its row count."""

        async def count(connection: Connection) -> int:
            return await connection.count(statement, params)

        return await self._traced(
            operation,
            lambda: self._written(lambda: self._run_statement(count, write=True)),
            attributes,
        )

    async def read_rows(
        self, statement: Statement, params: Params, operation: str
    ) -> Sequence[Row]:
        async def rows(connection: Connection) -> Sequence[Row]:
            return await connection.rows(statement, params)

        async def read() -> Sequence[Row]:
            with _explained("could not answer a read"):
                return await self._run_statement(rows, write=False)

        return await self._traced(operation, read)

    async def _traced(
        self,
        operation: str,
        run: Callable[[], Awaitable[T]],
        attributes: Mapping[str, Any] | None = None,
        then: Then[T] | None = None,
    ) -> T:
        if not self.traced:
            return await run()
        return await store_spans.traced(operation, run, attributes, then)

    async def _written(self, write: Callable[[], Awaitable[T]]) -> T:
        """``write``, explained; a lasting refusal is kept as `write_failure`
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

    async def cleanup(
        self,
        statement: Statement,
        params: Params,
        operation: str,
        attributes: Mapping[str, Any] | None = None,
    ) -> int:
        """One idempotent cleanup statement (keyed by the caller's own claim or run id),
        retried for a few seconds while the store is unavailable; its row count."""
        return await self._retried(
            lambda: self.write_count(statement, params, operation, attributes)
        )

    async def cleanup_transaction(
        self, body: Body[T], operation: str, attributes: Mapping[str, Any] | None = None
    ) -> T:
        """An idempotent cleanup of several statements, retried as `cleanup` is."""
        return await self._retried(lambda: self.transaction(body, operation, attributes))

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
        write must commit too (else `StoreCannotWrite` says why)."""
        await self.read_rows(PING, {}, "ping")
        if self.write_failure is not None:
            probe = {"key": PROBE_KEY, "value": secrets.token_bytes(PROBE_BYTES)}
            await self.write_count(PROBE_WRITE, probe, "ping")

    async def signing_secret(self) -> bytes:
        """The database's secret: the first worker's insert wins (a concurrent one waits,
        then does nothing), and everyone reads the winner's row back."""
        if self._secret is not None:
            return self._secret

        async def create_or_read(connection: Connection) -> bytes:
            await connection.count(
                CREATE_SECRET, {"key": SECRET_KEY, "value": secrets.token_bytes(32)}
            )
            (row,) = await connection.rows(READ_SECRET, {"key": SECRET_KEY})
            return bytes(row["value"])

        self._secret = await self.transaction(create_or_read, "signing_secret")
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
