"""The suite's own switches: what a first run without PostgreSQL says, and where
its PostgreSQL tests put their databases.

A new user's first run on a machine without PostgreSQL must end by saying how
many PostgreSQL tests were skipped, the same number pytest counts, and how to run
them. ``SYMFONIC_TEST_DATABASE_PREFIX`` names the databases the suite makes.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import POSTGRES_URL, drop_postgres_database, fresh_postgres_database, require_postgres

HERE = Path(__file__).parent

# Skipped three ways: a test's own fixture, both stores' parameter, and a
# module-scoped fixture that skips once for every test that uses it.
SKIPPING = '''
import pytest
from conftest import require_postgres


@pytest.fixture(scope="module")
def shared_server():
    require_postgres()


def test_needs_its_own_database(postgres_url):
    pass


def test_runs_on_both_stores(store_url):
    pass


@pytest.mark.parametrize("n", range(4))
def test_shares_one_server(shared_server, n):
    pass
'''


def closed_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return int(listener.getsockname()[1])


def test_a_run_without_postgres_counts_its_skips_as_pytest_does(tmp_path: Path) -> None:
    (tmp_path / "test_skipping.py").write_text(SKIPPING)
    env = {
        **os.environ,
        "SYMFONIC_TEST_POSTGRES_URL": f"postgresql://postgres@127.0.0.1:{closed_port()}/test",
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("SYMFONIC_REQUIRE_POSTGRES", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "--rootdir",
         str(tmp_path), str(tmp_path / "test_skipping.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    counted = re.search(r"(\d+) passed, (\d+) skipped", out)
    assert counted is not None, out
    assert (int(counted[1]), int(counted[2])) == (1, 6), out
    said = re.search(r"(\d+) PostgreSQL tests were SKIPPED", out)
    assert said is not None, out
    assert said[1] == "6", out
    assert "SYMFONIC_TEST_POSTGRES_URL=postgresql://" in out


def test_the_suites_databases_take_the_configured_prefix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require_postgres()
    monkeypatch.setenv("SYMFONIC_TEST_DATABASE_PREFIX", "mine_")
    url, name = fresh_postgres_database()
    try:
        assert name.startswith("mine_") and url.endswith(f"/{name}")
        assert name in asyncio.run(database_names())
    finally:
        drop_postgres_database(name)
    assert name not in asyncio.run(database_names())


def test_a_prefix_that_cannot_name_a_database_is_refused_in_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SYMFONIC_TEST_DATABASE_PREFIX", "my-tests;")
    with pytest.raises(pytest.fail.Exception, match="cannot start a database name"):
        fresh_postgres_database()


async def database_names() -> set[str]:
    import asyncpg

    conn = await asyncpg.connect(POSTGRES_URL.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        return {row["datname"] for row in await conn.fetch("SELECT datname FROM pg_database")}
    finally:
        await conn.close()
