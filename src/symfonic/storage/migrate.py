"""Bring a database to the newest schema, once, however many workers start: each holds the
database's lock around the migrations. Only this module loads SQLAlchemy and Alembic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from symfonic.storage.audit_log import register_audit_hash
from symfonic.storage.revision import OLDEST_BESIDE

SCRIPT_LOCATION = str(Path(__file__).parent / "migrations")
# An arbitrary constant shared by every symfonic worker: the advisory lock that
# makes concurrent start-ups run the migrations once.
POSTGRES_MIGRATION_LOCK = 0x5F4D_1C01


def _config(connection: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None
    return head


def oldest_beside() -> str:
    """The oldest revision whose workers can run beside the newest schema: the newest that a
    migration names as its ``oldest_beside`` ("" if none does)."""
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    scripts = ScriptDirectory.from_config(config).walk_revisions()
    return max(str(getattr(script.module, "oldest_beside", "")) for script in scripts)


def upgrade(connection: Connection) -> None:
    """Run pending migrations on ``connection``; a no-op at head or past it."""
    current = MigrationContext.configure(connection).get_current_revision()
    if current is not None and current >= head_revision():
        return
    command.upgrade(_config(connection), "head")
    connection.execute(
        sa.text(
            "INSERT INTO symfonic_meta (key, value) VALUES (:key, :value) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        ),
        {"key": OLDEST_BESIDE, "value": oldest_beside().encode()},
    )


def upgrade_sqlite(path: str, *, busy_timeout: float) -> None:
    """Migrate the file inside one ``BEGIN IMMEDIATE``: one migrator at a time."""
    engine = sa.create_engine(
        "sqlite+pysqlite:///" + path, connect_args={"timeout": busy_timeout}, poolclass=NullPool
    )

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        # A migration that changes pauses fires the audit trigger, which hashes.
        register_audit_hash(dbapi_connection)

    @event.listens_for(engine, "begin")
    def _begin(connection: sa.Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    try:
        with engine.begin() as connection:
            upgrade(connection)
    finally:
        engine.dispose()


async def upgrade_postgres(rest_of_url: str, *, connect_timeout: float) -> None:
    """Migrate under the advisory lock, on a connection of its own. asyncpg reads the URL,
    as the pool does: SQLAlchemy cannot parse several hosts (``h1:5432,h2:5433``)."""
    import asyncpg

    async def connect() -> Any:
        return await asyncpg.connect(f"postgresql://{rest_of_url}", timeout=connect_timeout)

    engine = create_async_engine("postgresql+asyncpg://", poolclass=NullPool, async_creator=connect)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(_upgrade_locked)
    finally:
        await engine.dispose()


def _upgrade_locked(connection: Connection) -> None:
    lock = sa.text("SELECT pg_advisory_xact_lock(:key)")
    connection.execute(lock, {"key": POSTGRES_MIGRATION_LOCK})
    upgrade(connection)
