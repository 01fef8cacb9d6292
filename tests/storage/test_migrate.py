"""Upgrading a store in use: a pause recorded under the old schema is still answerable.

A worker that upgrades symfonic finds pauses that earlier workers recorded
while their checkpoints had a table of their own. The upgrade moves each
checkpoint into its pause's row, and the pause is then claimed and resumed
like any other; a downgrade gives the checkpoints their table back. Both run
on SQLite and on the real PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from symfonic.core.contracts.store import CheckpointRecord, Claim, PruneBatch, ResumePublish
from symfonic.core.contracts.types import PauseState
from symfonic.storage import migrate, open_store
from symfonic.storage.audit_log import register_audit_hash

pytestmark = pytest.mark.anyio

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
TURN = {"messages": [{"role": "human", "content": "pay bob"}], "rounds": 1, "model_calls": 1}


def _alembic(connection: sa.Connection, step: Callable[[Config], None]) -> None:
    config = Config()
    config.set_main_option("script_location", migrate.SCRIPT_LOCATION)
    config.attributes["connection"] = connection
    step(config)


def _tables_at(connection: sa.Connection, revision: str) -> dict[str, sa.Table]:
    """The schema as migration ``revision`` left it, its tables by name."""
    _alembic(connection, lambda config: command.upgrade(config, revision))
    tables = sa.MetaData()
    tables.reflect(connection)
    return dict(tables.tables)


def _session_row(
    session_id: str, created_at: datetime, revision: int = 0, message_count: int = 0
) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "principal": "ann",
        "agent": "assistant",
        "revision": revision,
        "message_count": message_count,
        "metadata": {},
        "created_at": created_at,
    }


def _old_store_with_pauses(connection: sa.Connection) -> None:
    """The schema before checkpoints moved, holding a waiting pause and a published one."""
    tables = _tables_at(connection, "0001")
    sessions, pauses = tables["symfonic_sessions"], tables["symfonic_pauses"]
    checkpoints = tables["symfonic_checkpoints"]
    connection.execute(sessions.insert().values(_session_row("s1", T0, 3, 6)))
    for pause_id, state in (("waiting", "pending"), ("done", "published")):
        connection.execute(
            pauses.insert().values(
                pause_id=pause_id,
                session_id="s1",
                principal="ann",
                agent="assistant",
                kind="input",
                query="which colour?",
                response_schema={"type": "string"},
                tool_call_id="call_1",
                interrupt_id=f"int_{pause_id}",
                base_revision=3,
                state=state,
                created_at=T0,
                expires_at=T0 + timedelta(hours=1),
            )
        )
    connection.execute(
        checkpoints.insert().values(
            pause_id="waiting", session_id="s1", format_version=1, base_revision=3, body=TURN
        )
    )


def _downgraded_checkpoints(connection: sa.Connection) -> list[tuple[Any, ...]]:
    _alembic(connection, lambda config: command.downgrade(config, "0001"))
    rows = connection.execute(
        sa.text("SELECT pause_id, format_version, base_revision FROM symfonic_checkpoints")
    )
    return [tuple(row) for row in rows]


async def _migrated(store_url: str, work: Callable[[sa.Connection], Any]) -> Any:
    """``work`` on a migration connection to the store's database, committed after."""
    if store_url.startswith("sqlite"):
        engine = sa.create_engine(store_url.replace("sqlite:", "sqlite+pysqlite:", 1))
        # Pauses changed here fire the audit trigger, which hashes with the store's function.
        sa.event.listen(engine, "connect", lambda connection, _: register_audit_hash(connection))

        def run() -> Any:
            with engine.begin() as connection:
                return work(connection)

        try:
            return await anyio.to_thread.run_sync(run)
        finally:
            engine.dispose()
    from sqlalchemy.ext.asyncio import create_async_engine

    async_engine = create_async_engine(store_url.replace("postgresql://", "postgresql+asyncpg://"))
    try:
        async with async_engine.begin() as connection:
            return await connection.run_sync(work)
    finally:
        await async_engine.dispose()


async def test_a_pause_recorded_before_the_upgrade_is_claimed_with_its_checkpoint(
    store_url: str,
) -> None:
    await _migrated(store_url, _old_store_with_pauses)
    async with open_store(store_url) as store:  # opening upgrades the schema to head
        assert await store.load_checkpoint("waiting") == CheckpointRecord(
            "waiting", "s1", 1, 3, TURN
        )
        assert await store.load_checkpoint("done") is None
        now = T0 + timedelta(minutes=1)
        claim = Claim(
            "waiting", "claim-1", "ann", "blue", "resolved", now, now + timedelta(hours=1)
        )
        claimed = await store.claim_pause(claim)
        assert claimed is not None and claimed.checkpoint is not None
        assert claimed.checkpoint.body == TURN
        await store.publish_resume(
            ResumePublish("s1", "claim-1", [{"role": "ai", "content": "ok"}], "ok")
        )
        pause = await store.get_pause("waiting")
        assert pause is not None and pause.state is PauseState.PUBLISHED
        assert pause.server is None  # no MCP server asked it: the column came after it
        # The published pause's turn is in the history now; its checkpoint is dropped.
        assert await store.load_checkpoint("waiting") is None


async def test_a_downgrade_gives_waiting_checkpoints_their_table_back(store_url: str) -> None:
    await _migrated(store_url, _old_store_with_pauses)
    async with open_store(store_url):
        pass
    assert await _migrated(store_url, _downgraded_checkpoints) == [("waiting", 1, 3)]


def _sessions_before_activity_was_recorded(connection: sa.Connection) -> None:
    """The schema before sessions recorded their activity: an old session and a new one."""
    sessions = _tables_at(connection, "0002")["symfonic_sessions"]
    for session_id, created_at in (("old", T0), ("new", T0 + timedelta(days=45))):
        connection.execute(sessions.insert().values(_session_row(session_id, created_at)))


async def test_sessions_from_before_the_upgrade_are_idle_since_their_creation(
    store_url: str,
) -> None:
    await _migrated(store_url, _sessions_before_activity_was_recorded)
    async with open_store(store_url) as store:
        now = T0 + timedelta(days=50)
        report = await store.prune(PruneBatch(now - timedelta(days=30), now, 10, False))
        assert report.sessions == 1
        assert await store.get_session("old") is None
        assert await store.get_session("new") is not None
