"""A fresh store for each measurement, and the PostgreSQL server's housekeeping.

Every measurement starts from an empty store of its own, so that one's rows,
statistics and free pages never weigh on the next: a new SQLite file, or a new
PostgreSQL database created from ``template0`` and dropped afterwards, whatever
the measurement did. The server is asked through asyncpg, which the PostgreSQL
store itself uses.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
T = TypeVar("T")


def _dsn(url: str) -> str:
    """``url`` as asyncpg reads it (a store URL may name its driver: ``postgresql+asyncpg``)."""
    return "postgresql://" + url.partition("://")[2]


def _on_server(url: str, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
    """``work`` done on a connection of its own to the server at ``url``."""

    async def run() -> T:
        connection = await asyncpg.connect(_dsn(url), timeout=10)
        try:
            return await work(connection)
        finally:
            await connection.close()

    return asyncio.run(run())


def server_version(url: str) -> str:
    return str(_on_server(url, lambda connection: connection.fetchval("SHOW server_version")))


def reachable(url: str) -> str | None:
    """None when the server answers, else why not."""
    try:
        _on_server(url, lambda connection: connection.fetchval("SELECT 1"))
    except Exception as error:  # any failure to connect means "skip PostgreSQL"
        return f"{type(error).__name__}: {error}".strip()
    return None


def database_url(url: str, name: str) -> str:
    """``url`` (a ``postgresql://`` URL) with its database replaced by ``name``."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


@contextmanager
def fresh_store(server: str, folder: Path, name: str, *, keep: bool = False) -> Iterator[str]:
    """The URL of a new, empty store, removed afterwards unless ``keep``.

    ``server``: ``sqlite`` for a file ``name.db`` in ``folder``, else the URL of a
    PostgreSQL server whose user may create databases, for a database ``name``.
    """
    path = folder / f"{name}.db"
    files = [Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm")]

    async def drop(connection: asyncpg.Connection) -> None:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    async def create(connection: asyncpg.Connection) -> None:
        await drop(connection)
        # FILE_COPY: copying template0 through the WAL would dwarf the figures'
        # WAL volume for no reason (the copy happens before any measurement anyway).
        await connection.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 STRATEGY FILE_COPY')

    if server == "sqlite":
        for file in files:
            file.unlink(missing_ok=True)
    else:
        _on_server(server, create)
    try:
        yield f"sqlite:///{path}" if server == "sqlite" else database_url(server, name)
    finally:
        if not keep and server == "sqlite":
            for file in files:
                file.unlink(missing_ok=True)
        elif not keep:
            _on_server(server, drop)
