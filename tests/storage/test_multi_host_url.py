"""A store URL naming several PostgreSQL hosts opens wherever symfonic connects: the migration,
the pool and the watch of the store each skip a host that refuses and use the next."""

from __future__ import annotations

import socket
from contextlib import aclosing
from urllib.parse import urlsplit, urlunsplit

import anyio
import pytest

from symfonic.storage import masked_url, open_store

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


def _refusing_port() -> int:
    """A port nothing listens on: bound, then closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def multi_host(url: str) -> str:
    """``url`` with a host that refuses named first, and the primary asked for."""
    parts = urlsplit(url)
    user, _, hosts = parts.netloc.rpartition("@")
    netloc = f"{user}@" if user else ""
    netloc += f"127.0.0.1:{_refusing_port()},{hosts}"
    return urlunsplit(parts._replace(netloc=netloc, query="target_session_attrs=read-write"))


async def test_a_store_on_several_hosts_migrates_serves_and_is_watched(postgres_url: str) -> None:
    url = multi_host(postgres_url)
    async with open_store(url) as store:  # a fresh database: the migration runs
        assert await store.get_session("none") is None
        with anyio.fail_after(10):
            async with aclosing(store.watch_run_events()) as watch:
                assert await anext(watch) == []  # the listener is established


def test_a_multi_host_url_is_shown_without_its_password() -> None:
    url = "postgresql://app:secret@h1:5432,h2:5433/db?target_session_attrs=read-write"
    shown = masked_url(url)
    assert "secret" not in shown and "h1:5432,h2:5433/db" in shown
