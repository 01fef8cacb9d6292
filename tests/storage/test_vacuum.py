"""Space a prune frees goes back to the file system, and ``symfonic vacuum`` fixes old files.

A SQLite store made now is ``auto_vacuum=INCREMENTAL`` and each prune batch
returns the pages it freed: after pruning most of a file, little of it is free
pages. A file made before keeps them until ``symfonic vacuum`` rewrites it once,
after which it prunes the new way too. On PostgreSQL the command vacuums the
store's tables.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from bench.scale_load import Layout, load_pending

from symfonic.agent.retention import Retention, prune
from symfonic.cli.main import main
from symfonic.storage import open_store

pytestmark = pytest.mark.anyio

NOW = datetime.now(UTC)
OLD = Layout(2_000, created=NOW - timedelta(days=60), expires_in=timedelta(days=1))


def _pragma(path: Path, name: str) -> int:
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return int(connection.execute(f"PRAGMA {name}").fetchone()[0])
    finally:
        connection.close()


async def _fill_and_prune(url: str) -> None:
    async with open_store(url) as store:
        await load_pending(url, OLD)
        await store.sweep(NOW)  # expired: finished, and idle for 60 days
        report = await prune(store, Retention(timedelta(days=30)), NOW)
        assert report.sessions == OLD.count


async def test_a_new_store_gives_what_a_prune_frees_back(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    await _fill_and_prune(f"sqlite:///{path}")
    assert _pragma(path, "auto_vacuum") == 2  # incremental
    assert _pragma(path, "freelist_count") < _pragma(path, "page_count") / 10


async def test_symfonic_vacuum_gives_an_old_file_its_space_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.db"
    # A table before the store's own: the file keeps SQLite's default, no auto-vacuum.
    sqlite3.connect(path).execute("CREATE TABLE made_before (x)").connection.close()
    url = f"sqlite:///{path}"
    await _fill_and_prune(url)
    assert _pragma(path, "auto_vacuum") == 0
    free, size = _pragma(path, "freelist_count"), path.stat().st_size
    assert free > _pragma(path, "page_count") / 2

    assert await anyio.to_thread.run_sync(main, ["vacuum", "--store", url]) == 0
    assert _pragma(path, "auto_vacuum") == 2
    assert _pragma(path, "freelist_count") == 0
    assert path.stat().st_size < size / 2
    out = capsys.readouterr().out
    assert "bytes before" in out and "bytes after" in out


async def test_symfonic_vacuum_on_postgresql(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    await _fill_and_prune(postgres_url)
    assert await anyio.to_thread.run_sync(main, ["vacuum", "--store", postgres_url]) == 0
    assert capsys.readouterr().out.strip().endswith("done")
