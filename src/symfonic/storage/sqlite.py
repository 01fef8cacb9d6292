"""The embedded SQLite adapter: a file, no server, several processes at once.

Writes open with ``BEGIN IMMEDIATE`` so a transaction takes the database's write
lock before its first statement: two writers never both read and then fight to
upgrade, they queue on the lock (``busy_timeout``) instead. WAL lets readers go
on while one writer holds it. ``synchronous=NORMAL`` under WAL survives a crash
of any process; only a power cut can lose the last commits.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import create_async_engine

from symfonic.storage.sql_store import SqlStore

BUSY_TIMEOUT_SECONDS = 30


def _async_url(url: str) -> str:
    if url.startswith("sqlite+aiosqlite:"):
        return url
    if url.startswith("sqlite:"):
        return "sqlite+aiosqlite:" + url[len("sqlite:") :]
    raise ValueError(f"not a SQLite store URL: {url!r}")


class SqliteStore(SqlStore):
    def __init__(self, url: str) -> None:
        engine = create_async_engine(
            _async_url(url), connect_args={"timeout": BUSY_TIMEOUT_SECONDS}
        )

        @event.listens_for(engine.sync_engine, "connect")
        def _connect(dbapi_connection: Any, _record: Any) -> None:
            # Take transaction control from the driver so "begin" below decides.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_SECONDS * 1000}")
            cursor.close()

        @event.listens_for(engine.sync_engine, "begin")
        def _begin(connection: sa.Connection) -> None:
            connection.exec_driver_sql("BEGIN IMMEDIATE")

        super().__init__(url, engine)

    def _insert_ignore(self, table: sa.Table, keys: list[str]) -> Any:
        return sqlite_insert(table).on_conflict_do_nothing(index_elements=keys)
