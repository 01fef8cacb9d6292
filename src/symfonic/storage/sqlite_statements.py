"""Statements on one SQLite connection.

On the loop's connection a statement never waits for a lock: it raises `Locked` before
anything ran, and the work runs again on a thread that may wait.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio

from symfonic.storage.sqlite_checkpoints import BUSY_CODES
from symfonic.storage.statements import Params, Row, Statement
from symfonic.storage.transactions import Body

T = TypeVar("T")


class Locked(Exception):
    """The lock a statement needs is held by another connection; it did not run."""


def is_busy(error: sqlite3.OperationalError) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    # Extended codes (SQLITE_BUSY_RECOVERY, …) carry the primary code in the low byte.
    return code is not None and code & 0xFF in BUSY_CODES


async def inline_transaction(connection: sqlite3.Connection, body: Body[T]) -> T:
    """``body`` in one transaction on the loop's connection, committed whole or rolled back.

    A lock held elsewhere raises `Locked`, after the rollback.
    """
    try:
        connection.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:
        if is_busy(error):
            raise Locked from error
        raise
    try:
        value = await body(Inline(connection))
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    return value


def rows_of(connection: sqlite3.Connection, statement: Statement, params: Params) -> list[Row]:
    rows: list[Row] = connection.execute(statement.text, bound(params)).fetchall()
    return rows


def _count(connection: sqlite3.Connection, statement: Statement, params: Params) -> int:
    return connection.execute(statement.text, bound(params)).rowcount


def _each(connection: sqlite3.Connection, statement: Statement, params: Sequence[Params]) -> None:
    connection.executemany(statement.text, [bound(one) for one in params])


def _unless_busy(
    run: Callable[[sqlite3.Connection, Statement, Any], T],
    connection: sqlite3.Connection,
    statement: Statement,
    params: Any,
) -> T:
    try:
        return run(connection, statement, params)
    except sqlite3.OperationalError as error:
        if is_busy(error):
            raise Locked from error
        raise


class Inline:
    """Statements on the loop's connection: each runs as it is awaited, never suspending.

    A lock held by another connection raises `Locked` instead of waiting.
    """

    __slots__ = ("_connection",)

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    async def rows(self, statement: Statement, params: Params) -> Sequence[Row]:
        return _unless_busy(rows_of, self._connection, statement, params)

    async def count(self, statement: Statement, params: Params) -> int:
        return _unless_busy(_count, self._connection, statement, params)

    async def each(self, statement: Statement, params: Sequence[Params]) -> None:
        _unless_busy(_each, self._connection, statement, params)


class OnThread:
    """Statements on a connection that waits for the lock, each on a worker thread."""

    __slots__ = ("_connection",)

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    async def rows(self, statement: Statement, params: Params) -> Sequence[Row]:
        return await anyio.to_thread.run_sync(rows_of, self._connection, statement, params)

    async def count(self, statement: Statement, params: Params) -> int:
        return await anyio.to_thread.run_sync(_count, self._connection, statement, params)

    async def each(self, statement: Statement, params: Sequence[Params]) -> None:
        await anyio.to_thread.run_sync(_each, self._connection, statement, params)


def bound(params: Mapping[str, Any]) -> Mapping[str, Any]:
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
