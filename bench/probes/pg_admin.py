"""PostgreSQL housekeeping for the parent: is the server there, which version, and a
fresh database per configuration (so each one's table statistics are its own).
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import psycopg


def server_version(url: str) -> str:
    with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
        row = conn.execute("SHOW server_version").fetchone()
        return str(row[0]) if row else "unknown"


def reachable(url: str) -> str | None:
    """None when the server answers, else why not."""
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as error:  # any failure to connect means "skip PostgreSQL"
        return f"{type(error).__name__}: {error}".strip()
    return None


def create_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        # FILE_COPY: copying template0 through the WAL would dwarf the figures'
        # WAL volume for no reason (the copy happens before any measurement anyway).
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 STRATEGY FILE_COPY')


def drop_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_url(admin_url: str, name: str) -> str:
    """``admin_url`` (a ``postgresql://`` URL) with its database replaced by ``name``."""
    parts = urlsplit(admin_url)
    return urlunsplit(parts._replace(path=f"/{name}"))
