"""Which database errors fail a turn as ``StoreUnavailable`` (503) and which are bugs.

The end-to-end cases (terminated connections, restarts, an exhausted pool) are in
``test_postgres_failures.py`` and ``test_postgres_restart.py``; this pins the
classification for the errors those only meet by chance.
"""

from __future__ import annotations

import sqlite3

import asyncpg
import pytest
import sqlalchemy as sa

from symfonic.storage.failures import is_unavailable


def wrapped(orig: BaseException, *, invalidated: bool = False) -> sa.exc.DBAPIError:
    """What SQLAlchemy raises for a driver error ``orig``."""
    return sa.exc.DBAPIError.instance(
        "UPDATE ...", {}, orig, Exception, connection_invalidated=invalidated
    )


@pytest.mark.parametrize(
    "error",
    [
        sa.exc.TimeoutError("QueuePool limit of size 1 overflow 0 reached"),
        ConnectionRefusedError(111, "Connect call failed"),
        TimeoutError(),
        asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
        wrapped(asyncpg.exceptions.AdminShutdownError("terminating connection")),
        wrapped(asyncpg.exceptions.CannotConnectNowError("the database system is shutting down")),
        wrapped(asyncpg.exceptions.TooManyConnectionsError("too many clients")),
        wrapped(asyncpg.exceptions.DeadlockDetectedError("deadlock detected")),
        wrapped(asyncpg.exceptions.SerializationError("could not serialize")),
        wrapped(asyncpg.exceptions.ConnectionFailureError("connection failure")),
        wrapped(RuntimeError("connection is closed"), invalidated=True),
        wrapped(ConnectionResetError()),
        sa.exc.OperationalError("BEGIN IMMEDIATE", {}, sqlite3.OperationalError("locked")),
        sqlite3.OperationalError("unable to open database file"),
        sa.exc.InterfaceError("SELECT 1", {}, Exception("connection is closed")),
    ],
    ids=repr,
)
def test_out_of_reach_or_transient_is_unavailable(error: BaseException) -> None:
    assert is_unavailable(error)


@pytest.mark.parametrize(
    "error",
    [
        wrapped(asyncpg.exceptions.UniqueViolationError("duplicate key")),
        wrapped(asyncpg.exceptions.UndefinedTableError("relation does not exist")),
        sa.exc.IntegrityError("INSERT", {}, sqlite3.IntegrityError("UNIQUE constraint failed")),
        ValueError("a bug"),
    ],
    ids=repr,
)
def test_a_broken_statement_is_a_bug_not_an_outage(error: BaseException) -> None:
    assert not is_unavailable(error)


def test_the_schema_revision_is_the_migrations_head() -> None:
    # Opening a store at this revision skips the migration machinery altogether.
    from symfonic.storage import migrate
    from symfonic.storage.revision import SCHEMA_HEAD

    assert migrate.head_revision() == SCHEMA_HEAD
