"""Fixtures shared by the whole suite: the stores every behaviour is checked on.

Each store-backed test runs once on SQLite and once on the real PostgreSQL
named by ``SYMFONIC_TEST_POSTGRES_URL`` (default: the local server). Where that
server cannot be reached the PostgreSQL half is skipped and the run says so at
the end, with how to run it; with ``SYMFONIC_REQUIRE_POSTGRES=1`` (CI) an
unreachable server fails the run instead. Each PostgreSQL test makes its own
database, named ``SYMFONIC_TEST_DATABASE_PREFIX`` (default ``symfonic_t_``)
followed by a random suffix.
"""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

POSTGRES_URL = os.environ.get(
    "SYMFONIC_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
REQUIRE_POSTGRES = os.environ.get("SYMFONIC_REQUIRE_POSTGRES") == "1"
SKIPPED_FOR_POSTGRES = "PostgreSQL not reachable at"
DEFAULT_DATABASE_PREFIX = "symfonic_t_"
# A database name is at most 63 bytes; the random suffix takes 12 of them.
_PREFIX = re.compile(r"[a-z_][a-z0-9_]{0,50}")

_postgres_state: dict[str, object] = {"checked": False, "error": None}


def _admin_dsn() -> str:
    return POSTGRES_URL.replace("postgresql+asyncpg://", "postgresql://")


def postgres_error() -> str | None:
    """Why PostgreSQL cannot be used, or ``None``; asked once per run."""
    if not _postgres_state["checked"]:
        _postgres_state["checked"] = True
        try:
            import asyncpg

            async def probe() -> None:
                conn = await asyncpg.connect(_admin_dsn(), timeout=3)
                await conn.close()

            asyncio.run(probe())
        except Exception as error:  # any reason at all means "not reachable"
            _postgres_state["error"] = f"{type(error).__name__}: {error}"
    error = _postgres_state["error"]
    return None if error is None else str(error)


def require_postgres() -> None:
    """Skip (or, in CI, fail) a test that needs PostgreSQL when it is not there."""
    error = postgres_error()
    if error is None:
        return
    if REQUIRE_POSTGRES:
        pytest.fail(
            f"SYMFONIC_REQUIRE_POSTGRES=1 but PostgreSQL at {POSTGRES_URL} is unreachable: {error}"
        )
    pytest.skip(f"{SKIPPED_FOR_POSTGRES} {POSTGRES_URL}")


def database_prefix() -> str:
    """How the suite's databases are named: ``SYMFONIC_TEST_DATABASE_PREFIX``, checked."""
    prefix = os.environ.get("SYMFONIC_TEST_DATABASE_PREFIX", DEFAULT_DATABASE_PREFIX)
    if not _PREFIX.fullmatch(prefix):
        pytest.fail(
            f"SYMFONIC_TEST_DATABASE_PREFIX={prefix!r} cannot start a database name: use "
            "lower-case letters, digits and underscores, not starting with a digit, "
            "at most 51 characters"
        )
    return prefix


def fresh_postgres_database() -> tuple[str, str]:
    """Create an empty database for one test; returns (url, name)."""
    import asyncpg

    name = f"{database_prefix()}{uuid.uuid4().hex[:12]}"

    async def create() -> None:
        conn = await asyncpg.connect(_admin_dsn())
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    asyncio.run(create())
    base, _, _ = _admin_dsn().rpartition("/")
    return f"{base}/{name}", name


def drop_postgres_database(name: str) -> None:
    import asyncpg

    async def drop() -> None:
        conn = await asyncpg.connect(_admin_dsn())
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()

    asyncio.run(drop())


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for this test."""
    require_postgres()
    url, name = fresh_postgres_database()
    try:
        yield url
    finally:
        drop_postgres_database(name)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'symfonic.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Each store-backed test runs on both stores."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'symfonic.db'}"
        return
    yield request.getfixturevalue("postgres_url")


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[object]:
    from symfonic.storage import open_store

    async with open_store(store_url) as opened:
        yield opened


def _skipped_for_postgres(report: pytest.TestReport) -> bool:
    longrepr = report.longrepr
    return isinstance(longrepr, tuple) and SKIPPED_FOR_POSTGRES in str(longrepr[2])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # Counted from pytest's own record of skips, so a module-scoped fixture that
    # skips once counts every test it skipped, exactly as pytest's summary does.
    reports = terminalreporter.stats.get("skipped", [])
    skipped = sum(1 for report in reports if _skipped_for_postgres(report))
    if skipped:
        terminalreporter.write_line(
            f"PostgreSQL was not reachable at {POSTGRES_URL} "
            f"({_postgres_state['error']}): {skipped} PostgreSQL tests were SKIPPED. "
            "To run them, start PostgreSQL and point SYMFONIC_TEST_POSTGRES_URL at a "
            "database the user may CREATE DATABASE in, e.g. "
            "SYMFONIC_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/test pytest",
            yellow=True,
            bold=True,
        )
