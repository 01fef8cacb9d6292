"""Store adapters behind the port of `symfonic.core.contracts.store`."""

from __future__ import annotations

import os

from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.store import Store

DEFAULT_STORE = "sqlite:///symfonic.db"


def store_url(url: str | None = None) -> str:
    """The store URL: the argument, else ``SYMFONIC_STORE``, else the embedded default."""
    return url or os.environ.get("SYMFONIC_STORE") or DEFAULT_STORE


def masked_url(url: str) -> str:
    """The store URL with any password hidden, for banners and messages."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return url.split("@")[-1]


def open_store(url: str | None = None) -> Store:
    """An unopened store for ``url``; enter it with ``async with`` to migrate and connect."""
    resolved = store_url(url)
    if resolved.startswith("sqlite"):
        from symfonic.storage.sqlite import SqliteStore

        return SqliteStore(resolved)
    if resolved.startswith(("postgresql", "postgres")):
        from symfonic.storage.postgres import PostgresStore

        return PostgresStore(resolved)
    raise ConfigurationError(
        f"unknown store URL {resolved!r}: use sqlite:///path.db or postgresql://user@host/db"
    )
