"""The upgrade that marks delegated pauses keeps the record of pause changes working.

Migration 0007 adds the delegation columns to ``symfonic_pauses`` with plain
``ADD COLUMN`` (a table rebuild would drop the triggers of migration 0004 on
SQLite) and makes those triggers skip a delegate's own pause. A store upgraded
from 0005 with a pause waiting still records every change of an ordinary pause,
the one from before the upgrade included, and none of a delegate's.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from symfonic.core.contracts.store import Claim
from symfonic.core.contracts.types import PauseState
from symfonic.storage import open_store
from test_migrate import _migrated, _session_row, _tables_at

pytestmark = pytest.mark.anyio

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def _pause(pause_id: str, **extra: object) -> dict[str, object]:
    return {
        "pause_id": pause_id,
        "session_id": "s1",
        "principal": "ann",
        "agent": "assistant",
        "kind": "input",
        "query": "which colour?",
        "response_schema": {"type": "string"},
        "tool_call_id": "call_1",
        "interrupt_id": f"int_{pause_id}",
        "base_revision": 0,
        "state": "pending",
        "created_at": T0,
        "expires_at": T0 + timedelta(hours=1),
        **extra,
    }


def _store_at_0005_with_a_waiting_pause(connection: sa.Connection) -> None:
    tables = _tables_at(connection, "0005")
    connection.execute(tables["symfonic_sessions"].insert().values(_session_row("s1", T0)))
    connection.execute(tables["symfonic_pauses"].insert().values(_pause("before")))


def _after_upgrade(connection: sa.Connection) -> list[tuple[str, str]]:
    """Insert an ordinary pause and a delegate's, then read the record of changes."""
    pauses = sa.Table("symfonic_pauses", sa.MetaData(), autoload_with=connection)
    connection.execute(pauses.insert().values(_pause("after")))
    connection.execute(pauses.insert().values(_pause("delegated", parent_session_id="s0")))
    connection.execute(
        pauses.update().where(pauses.c.pause_id == "delegated").values(state="abandoned")
    )
    rows = connection.execute(
        sa.text("SELECT pause_id, state FROM symfonic_pause_events ORDER BY id")
    )
    return [(row[0], row[1]) for row in rows]


async def test_pause_changes_are_recorded_after_the_upgrade_except_a_delegates(
    store_url: str,
) -> None:
    await _migrated(store_url, _store_at_0005_with_a_waiting_pause)
    async with open_store(store_url) as store:  # opening upgrades the schema to head
        now = T0 + timedelta(minutes=1)
        claim = Claim("before", "c1", "ann", "blue", "resolved", now, now + timedelta(hours=1))
        assert await store.claim_pause(claim) is not None
        row = await store.get_pause("before")
        assert row is not None and row.state is PauseState.CLAIMED
        assert row.parent_session_id is None and row.sub_agent is None
    recorded = await _migrated(store_url, _after_upgrade)
    assert recorded == [
        ("before", "pending"), ("before", "claimed"), ("after", "pending"),
    ]
