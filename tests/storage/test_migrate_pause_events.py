"""The record of pause changes after migration 0008: leaner on SQLite, the same to a reader.

On SQLite the table is rebuilt without ``AUTOINCREMENT`` and without the index
on ``at``. What a reader relies on must not move: the changes recorded before
the upgrade keep their positions, a new change gets a position above every
earlier one (after a trim too), the triggers still record every change and owe
its webhooks, and a downgrade gives the table back as it was.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from alembic import command

from symfonic.storage import open_store
from symfonic.storage.retention import TRIM_OLD_EVENTS
from test_migrate import _alembic, _migrated, _session_row, _tables_at
from test_migrate_delegation import T0, _pause

pytestmark = pytest.mark.anyio


def _store_at_0007_with_changes(connection: sa.Connection) -> None:
    """Two pauses recorded at 0007 (two changes), and a subscriber to created pauses."""
    tables = _tables_at(connection, "0007")
    connection.execute(
        tables["symfonic_webhook_subscriptions"]
        .insert()
        .values(url="https://hooks.example/a", event_type="pause.created")
    )
    connection.execute(tables["symfonic_sessions"].insert().values(_session_row("s1", T0)))
    for pause_id in ("first", "second"):
        connection.execute(tables["symfonic_pauses"].insert().values(_pause(pause_id)))


def _changes(connection: sa.Connection) -> list[tuple[int, str, str]]:
    rows = connection.execute(
        sa.text("SELECT id, pause_id, state FROM symfonic_pause_events ORDER BY id")
    )
    return [(row[0], row[1], row[2]) for row in rows]


def _record_one_more(connection: sa.Connection) -> list[tuple[int, str, str]]:
    pauses = sa.Table("symfonic_pauses", sa.MetaData(), autoload_with=connection)
    connection.execute(pauses.insert().values(_pause("third")))
    return _changes(connection)


def _deliveries(connection: sa.Connection) -> list[tuple[str, str]]:
    rows = connection.execute(
        sa.text("SELECT message_id, pause_id FROM symfonic_webhook_deliveries ORDER BY id")
    )
    return [(row[0], row[1]) for row in rows]


async def test_changes_keep_their_positions_and_new_ones_follow(store_url: str) -> None:
    await _migrated(store_url, _store_at_0007_with_changes)
    before = await _migrated(store_url, _changes)
    async with open_store(store_url) as store:  # opening upgrades the schema to head
        assert await store.pause_change_position() == before[-1][0]
    after = await _migrated(store_url, _record_one_more)
    assert after[:2] == before
    assert after[2][1:] == ("third", "pending") and after[2][0] > before[-1][0]
    # The table's own trigger was made again: each created pause is owed its webhook.
    owed = await _migrated(store_url, _deliveries)
    assert [pause_id for _, pause_id in owed] == ["first", "second", "third"]
    # Owed before the upgrade: the id it had. After: the pause's id makes it unique.
    assert owed[0][0] == f"msg_pause_{before[0][0]}"
    assert owed[2][0] == f"msg_pause_third_{after[2][0]}"


def _shape(connection: sa.Connection) -> tuple[bool, list[str], list[str]]:
    """Whether ids use AUTOINCREMENT, the table's indexes, and the triggers on both tables."""
    table = connection.execute(
        sa.text("SELECT sql FROM sqlite_master WHERE name = 'symfonic_pause_events'")
    ).scalar_one()
    indexes = connection.execute(
        sa.text(
            "SELECT name FROM sqlite_master WHERE type = 'index'"
            " AND tbl_name = 'symfonic_pause_events' AND sql IS NOT NULL"
        )
    ).scalars()
    triggers = connection.execute(
        sa.text("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
    ).scalars()
    return "AUTOINCREMENT" in table.upper(), sorted(indexes), list(triggers)


TRIGGERS = ["symfonic_pause_change_webhooks", "symfonic_pause_changed", "symfonic_pause_created"]
# Migration 0014's, which keep the count of pending pauses; a downgrade to 0007 drops them.
TALLY_TRIGGERS = ["symfonic_tally_changed", "symfonic_tally_created", "symfonic_tally_deleted"]
# Migrations 0015's and 0020's, which write the audit trail; a downgrade to 0007 drops them too.
AUDIT_TRIGGERS = [
    "symfonic_audit_append",
    "symfonic_audit_asked",
    "symfonic_audit_changed",
    "symfonic_audit_readdressed",
]


async def test_on_sqlite_the_table_is_lean_and_a_downgrade_restores_it(sqlite_url: str) -> None:
    await _migrated(sqlite_url, _store_at_0007_with_changes)
    async with open_store(sqlite_url):
        pass
    assert await _migrated(sqlite_url, _shape) == (
        False,
        [],
        sorted(TRIGGERS + TALLY_TRIGGERS + AUDIT_TRIGGERS),
    )

    def downgrade(connection: sa.Connection) -> tuple[bool, list[str], list[str]]:
        _alembic(connection, lambda config: command.downgrade(config, "0007"))
        return _shape(connection)

    restored = await _migrated(sqlite_url, downgrade)
    assert restored == (True, ["ix_symfonic_pause_events_at"], TRIGGERS)
    changes = await _migrated(sqlite_url, _record_one_more)
    assert [pause_id for _, pause_id, _ in changes] == ["first", "second", "third"]


async def test_a_position_is_never_handed_out_again_after_a_trim(store_url: str) -> None:
    """The trim keeps the newest change, so the next id is above every id ever given."""
    await _migrated(store_url, _store_at_0007_with_changes)
    async with open_store(store_url) as store:
        newest = await store.pause_change_position()

    def trim_then_record(connection: sa.Connection) -> list[tuple[int, str, str]]:
        # A day from now every change is older than the cutoff: all but the newest go.
        cutoff = datetime.now(UTC) + timedelta(days=1)
        connection.execute(sa.text(TRIM_OLD_EVENTS.text), {"cutoff": cutoff})
        return _record_one_more(connection)

    changes = await _migrated(store_url, trim_then_record)
    assert [(position, pause_id) for position, pause_id, _ in changes][:1] == [(newest, "second")]
    assert len(changes) == 2 and changes[1][0] > newest
