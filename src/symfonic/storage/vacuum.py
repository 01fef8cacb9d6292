"""Giving a store's free space back: `symfonic vacuum`, a command an operator runs when the
service is quiet, never something the service does by itself.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import anyio

from symfonic.core.contracts.errors import StoreUnavailable
from symfonic.storage.failures import is_unavailable
from symfonic.storage.sqlite_file import path_of

TABLES = (
    "symfonic_sessions",
    "symfonic_messages",
    "symfonic_pauses",
    "symfonic_pause_events",
    "symfonic_webhook_deliveries",
)
BUSY_TIMEOUT_SECONDS = 30


@dataclass(frozen=True)
class VacuumReport:
    """The store's size before and after, in bytes (``None`` where not measured)."""

    before: int | None
    after: int | None


def _sqlite_size(connection: sqlite3.Connection) -> int:
    pages = int(connection.execute("PRAGMA page_count").fetchone()[0])
    return pages * int(connection.execute("PRAGMA page_size").fetchone()[0])


def _vacuum_sqlite(path: str) -> VacuumReport:
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        before = _sqlite_size(connection)
        connection.execute("PRAGMA auto_vacuum=INCREMENTAL")
        connection.execute("VACUUM")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return VacuumReport(before, _sqlite_size(connection))
    finally:
        connection.close()


async def _vacuum_postgres(url: str) -> VacuumReport:
    import asyncpg

    connection = await asyncpg.connect("postgresql://" + url.partition("://")[2])
    try:
        # VACUUM runs outside a transaction, one statement a table.
        for table in TABLES:
            await connection.execute(f"VACUUM (ANALYZE) {table}")
    finally:
        await connection.close()
    return VacuumReport(None, None)


async def vacuum(url: str) -> VacuumReport:
    """Give the store at ``url`` its free space back (see the module's docstring)."""
    try:
        if url.startswith("sqlite"):
            return await anyio.to_thread.run_sync(_vacuum_sqlite, path_of(url))
        return await _vacuum_postgres(url)
    except Exception as error:
        if is_unavailable(error):
            raise StoreUnavailable(f"the store could not be vacuumed now: {error}") from error
        raise
