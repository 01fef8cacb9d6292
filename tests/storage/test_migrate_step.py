"""Migrating as a step of its own: ``symfonic migrate`` says what it did, ``serve --no-migrate``
refuses an older store in words, and a worker starts beside a newer schema only where that
schema names it as one that can run beside it. On SQLite and on the real PostgreSQL.
"""

from __future__ import annotations

import anyio
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from symfonic.cli.main import main
from symfonic.core.contracts.errors import ConfigurationError
from symfonic.storage import migrate, open_store
from symfonic.storage.revision import NO_MIGRATE, OLDEST_BESIDE, SCHEMA_HEAD
from test_migrate import _alembic, _migrated

pytestmark = pytest.mark.anyio
PREVIOUS = f"{int(SCHEMA_HEAD) - 1:04d}"


async def _main(*argv: str) -> int:
    return await anyio.to_thread.run_sync(main, list(argv))


async def _migrate(url: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert await _main("migrate", "--store", url) == 0
    return capsys.readouterr().out


async def test_migrate_says_what_it_did_and_serve_no_migrate_refuses_an_older_store(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(NO_MIGRATE, "")  # serve --no-migrate sets it; restored after
    await _migrated(store_url, lambda c: _alembic(c, lambda cfg: command.upgrade(cfg, PREVIOUS)))
    assert await _main("serve", "--no-migrate", "--store", store_url, "--port", "0") == 2
    refused = capsys.readouterr().err
    assert f"is at schema {PREVIOUS} and this symfonic runs schema {SCHEMA_HEAD}" in refused
    assert "symfonic migrate --store URL" in refused and "Traceback" not in refused
    said = await _migrate(store_url, capsys)
    assert f"migrated from schema {PREVIOUS} to {SCHEMA_HEAD}; workers of schema" in said
    assert f"already at the newest schema ({SCHEMA_HEAD})" in await _migrate(store_url, capsys)


async def test_migrate_creates_the_schema_of_an_empty_store(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert f"had no schema; created schema {SCHEMA_HEAD}" in await _migrate(store_url, capsys)


def _newer(revision: str, oldest_beside: str) -> object:
    def work(connection: sa.Connection) -> None:
        connection.execute(sa.text("UPDATE alembic_version SET version_num = :r"), {"r": revision})
        connection.execute(
            sa.text("UPDATE symfonic_meta SET value = :v WHERE key = :k"),
            {"v": oldest_beside.encode(), "k": OLDEST_BESIDE},
        )

    return work


async def test_a_worker_runs_beside_a_newer_schema_only_where_it_names_it(store_url: str) -> None:
    async with open_store(store_url):
        pass
    await _migrated(store_url, _newer("9998", SCHEMA_HEAD))
    async with open_store(store_url) as store:  # expand-only since this version: it starts
        await store.ping()
    await _migrated(store_url, _newer("9999", "9998"))
    with pytest.raises(ConfigurationError) as refused:
        async with open_store(store_url):
            pass
    assert f"is at schema 9999, newer than this symfonic's {SCHEMA_HEAD}" in str(refused.value)
    assert "older than 9998 cannot run beside it" in str(refused.value)


def test_every_migration_since_0024_names_the_oldest_revision_that_runs_beside_it() -> None:
    """What an older worker reads to decide (docs/deploy.md): a migration that drops or renames
    what a release uses names that release's successor; one that only adds, the release before."""
    config = Config()
    config.set_main_option("script_location", migrate.SCRIPT_LOCATION)
    for script in ScriptDirectory.from_config(config).walk_revisions():
        if script.revision >= "0024":
            named = getattr(script.module, "oldest_beside", "")
            assert "0001" <= named < script.revision, script.path
