"""Which driver errors mean the database is out of reach, and so become `StoreUnavailable`
(503): each rolled its transaction back and is worth retrying. Anything else is a bug and
propagates.
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
