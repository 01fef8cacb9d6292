"""Which driver errors mean "the database is out of reach", and so fail a turn as 503.

A pool that stays exhausted past its timeout, a connection the server dropped
(terminated backend, restart, network), a server that is shutting down or not
yet accepting connections, a deadlock or serialisation failure: each rolled its
transaction back, so nothing was written, and each is worth retrying later. They
become :class:`~symfonic.core.contracts.errors.StoreUnavailable`. Anything else
(a constraint violated, a bad statement) is a bug and propagates as it is.

PostgreSQL says which kind of failure it was in the SQLSTATE; asyncpg puts it on
the exception (and SQLAlchemy, which runs the migrations, copies it to the error
it wraps). asyncpg reports a connection it already knows is closed, and a pool
that is closing, as an ``InterfaceError`` with no SQLSTATE; a connection the
server dropped while the driver was still reading an earlier reply refuses its
next statement with an ``InternalClientError`` ("another operation is in
progress"), before sending anything.
"""

from __future__ import annotations

import sqlite3
import sys

# SQLSTATE classes that are about the server or the connection, not the statement:
# 08 connection exception, 40 transaction rollback (serialisation failure,
# deadlock), 53 insufficient resources (too many connections), 57 operator
# intervention (admin shutdown, crash shutdown, cannot connect now, statement
# cancelled), 58 system error.
TRANSIENT_SQLSTATE_CLASSES = frozenset({"08", "40", "53", "57", "58"})


def _sqlstate(error: BaseException) -> str | None:
    for candidate in (error, getattr(error, "orig", None)):
        code = getattr(candidate, "sqlstate", None) or getattr(candidate, "pgcode", None)
        if isinstance(code, str) and len(code) == 5:
            return code
    return None


def _asyncpg_unavailable(error: BaseException) -> bool:
    # Looked up, not imported: if asyncpg was never loaded, none of its errors can occur.
    asyncpg = sys.modules.get("asyncpg")
    return asyncpg is not None and isinstance(
        error, asyncpg.InterfaceError | asyncpg.InternalClientError
    )


def _sqlalchemy_unavailable(error: BaseException) -> bool:
    # SQLAlchemy runs only the migrations, and is loaded only for them.
    sa = sys.modules.get("sqlalchemy")
    if sa is None:
        return False
    if isinstance(error, sa.exc.TimeoutError):
        return True
    if isinstance(error, sa.exc.DBAPIError):
        if error.connection_invalidated:
            return True
        if isinstance(error, sa.exc.OperationalError | sa.exc.InterfaceError):
            # SQLite's "database is locked" / "unable to open"; asyncpg's
            # "connection is closed".
            return True
        if isinstance(error.orig, OSError):
            return True
    return False


def is_unavailable(error: BaseException) -> bool:
    """Whether ``error`` means the database could not complete the work, for now."""
    if isinstance(error, OSError | sqlite3.OperationalError):
        # Refused or reset connections; timeouts; SQLite's locked, unreadable or
        # missing file.
        return True
    if _asyncpg_unavailable(error) or _sqlalchemy_unavailable(error):
        # asyncpg's closed or half-closed connection; SQLAlchemy's wrapping of either.
        return True
    code = _sqlstate(error)
    return code is not None and code[:2] in TRANSIENT_SQLSTATE_CLASSES


# SQLite's primary result codes for a write the disk or the file refuses, with the
# words a person reads; extended codes (SQLITE_IOERR_WRITE, …) carry these in the
# low byte.
_SQLITE_CANNOT_WRITE = {
    8: "the database file is read-only",
    10: "the disk holding the database reported an I/O error",
    13: "the disk holding the database is full",
}
# PostgreSQL's: 53100 disk_full, 58030 io_error.
_SQLSTATE_CANNOT_WRITE = {
    "53100": "the database server's disk is full",
    "58030": "the database server reported an I/O error",
}


def cannot_write(error: BaseException) -> str | None:
    """Why no write can commit until someone acts (a full disk), in words; else ``None``.

    These failures last: retrying them for seconds only delays the answer, so a
    turn fails fast on them and the store owes what it could not write.
    """
    if isinstance(error, sqlite3.Error):
        code = getattr(error, "sqlite_errorcode", None)
        return None if code is None else _SQLITE_CANNOT_WRITE.get(code & 0xFF)
    code = _sqlstate(error)
    return None if code is None else _SQLSTATE_CANNOT_WRITE.get(code)
