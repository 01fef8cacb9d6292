"""Bring a database to the newest schema, once, however many workers start.

The adapter holds its own lock around this (an advisory lock on PostgreSQL, the
write lock on SQLite), so two workers started at the same moment run the
migrations once between them.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection

SCRIPT_LOCATION = str(Path(__file__).parent / "migrations")


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


def upgrade(connection: Connection) -> None:
    """Run pending migrations on ``connection``; a no-op at head."""
    current = MigrationContext.configure(connection).get_current_revision()
    if current == head_revision():
        return
    command.upgrade(_config(connection), "head")
