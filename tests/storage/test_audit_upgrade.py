"""A chain written before the audit triggers changed still verifies after, as one chain.

Records written at an old revision, then sealed ones written at head, form one sequence,
each `prev_hash` the hash before it; a declined answer written at 0021 keeps saying `answered`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from functools import partial
from typing import Any

import anyio
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from symfonic.core.contracts.audit import verify_log
from symfonic.core.contracts.types import InteractionKind
from symfonic.storage import migrate, open_store
from symfonic.storage.audit_log import _chained_hash, register_audit_hash
from test_store_pauses import T0, claim_of, claimed, new_session, paused

pytestmark = pytest.mark.anyio


def _at(connection: sa.Connection, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", migrate.SCRIPT_LOCATION)
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


def _written_at(revision: str, connection: sa.Connection) -> None:
    """Three pauses asked, two answered in one statement, by the triggers at ``revision``."""
    _at(connection, revision)
    tables = sa.MetaData()
    tables.reflect(connection)
    sessions, pauses = tables.tables["symfonic_sessions"], tables.tables["symfonic_pauses"]
    connection.execute(
        sessions.insert().values(
            session_id="s1", principal="ann", agent="assistant", revision=0,
            message_count=0, metadata={}, created_at=T0, active_at=T0,
        )
    )
    for n in range(3):
        connection.execute(
            pauses.insert().values(
                pause_id=f"p{n}", session_id="s1", principal="ann", agent="assistant",
                kind="input", query="which colour?", response_schema={"type": "string"},
                tool_call_id=f"call_{n}", interrupt_id=f"int_{n}", base_revision=0,
                state="pending", created_at=T0, expires_at=T0 + timedelta(hours=1),
            )
        )
    connection.execute(
        pauses.update()
        .where(pauses.c.pause_id.in_(["p0", "p1"]))
        .values(state="claimed", claim_id="c", answered_by="bob", answer="blue",
                answer_status="resolved", answered_at=T0)
    )


def _sealed_at_0024(connection: sa.Connection) -> None:
    """Records sealed one UPDATE each, as the sealer of 0024 did, and two left unsealed."""
    _written_at("0024", connection)
    unsealed = "SELECT * FROM symfonic_audit WHERE sequence < 0 ORDER BY sequence DESC LIMIT 3"
    head = connection.execute(sa.text("SELECT sequence, hash FROM symfonic_audit_head")).one()
    sequence, prev = head
    seal = sa.text(
        "UPDATE symfonic_audit SET sequence = :s, prev_hash = :p, hash = :h WHERE sequence = :u"
    )
    for row in connection.execute(sa.text(unsealed)).mappings().all():
        sequence += 1
        hashed = _chained_hash(row, sequence, prev)
        connection.execute(seal, {"s": sequence, "p": prev, "h": hashed, "u": row["sequence"]})
        prev = hashed
    moved = {"s": sequence, "h": prev}
    connection.execute(sa.text("UPDATE symfonic_audit_head SET sequence = :s, hash = :h"), moved)


def _declined_at_0021(connection: sa.Connection) -> None:
    """An MCP server's form asked and declined, by the triggers that knew only cancelled."""
    _written_at("0016", connection)
    _at(connection, "0021")
    pauses = sa.Table("symfonic_pauses", sa.MetaData(), autoload_with=connection)
    connection.execute(
        pauses.update()
        .where(pauses.c.pause_id == "p2")
        .values(state="claimed", claim_id="d", answered_by="bob", answer_status="declined",
                answered_at=T0, server="bank")
    )


async def _old_store(store_url: str, written: Any) -> None:
    if store_url.startswith("sqlite"):
        engine = sa.create_engine(store_url.replace("sqlite:", "sqlite+pysqlite:", 1))
        sa.event.listen(engine, "connect", lambda connection, _: register_audit_hash(connection))

        def run() -> None:
            with engine.begin() as connection:
                written(connection)

        try:
            await anyio.to_thread.run_sync(run)
        finally:
            engine.dispose()
        return
    from sqlalchemy.ext.asyncio import create_async_engine

    engine_ = create_async_engine(store_url.replace("postgresql://", "postgresql+asyncpg://"))
    try:
        async with engine_.begin() as connection:
            await connection.run_sync(written)
    finally:
        await engine_.dispose()


# 0016: migration 0015's row triggers; 0023: each record chained in its transaction
# under the head row's lock, as the release before sealing wrote them; 0024: three sealed
# one UPDATE each, two waiting for a seal.
@pytest.mark.parametrize("revision", ["0016", "0023", "0024"])
async def test_records_written_before_and_after_the_upgrade_verify_as_one_chain(
    store_url: str, revision: str
) -> None:
    written = _sealed_at_0024 if revision == "0024" else partial(_written_at, revision)
    await _old_store(store_url, written)
    async with open_store(store_url) as store:  # opening upgrades the schema to head
        waiting = await store.seal_audit()  # what the old release left unsealed
        assert waiting == (2 if revision == "0024" else 0)
        before: Any = await store.audit_records(after=0, limit=100)
        assert [(r.event, r.pause_id) for r in before] == [
            ("asked", "p0"), ("asked", "p1"), ("asked", "p2"),
            ("answered", "p0"), ("answered", "p1"),
        ]
        session_id = await new_session(store)
        await claimed(store, session_id)
        await paused(store, session_id, expires_at=T0 + timedelta(minutes=1))
        # p2 and the new pause expire in one statement; the new claim's lease lapses.
        report = await store.sweep(T0 + timedelta(hours=2))
        assert (report.expired, report.abandoned) == (2, 1)
        assert await store.seal_audit() == 6
        trail = await store.audit_records(after=0, limit=100)
        assert [r.sequence for r in trail] == list(range(1, 12))
        assert trail[5].prev_hash == before[-1].hash
        assert [r.event for r in trail[5:]] == [
            "asked", "answered", "asked", "expired", "expired", "abandoned",
        ]
        assert await verify_log(store) == (11, None)


async def test_a_declined_answer_after_the_upgrade_says_declined_and_the_chain_verifies(
    store_url: str,
) -> None:
    await _old_store(store_url, _declined_at_0021)
    async with open_store(store_url) as store:
        session_id = await new_session(store)
        form = {"kind": InteractionKind.FORM, "server": "bank"}
        refused = await paused(store, session_id, **form)
        dropped = await paused(store, session_id, **form)
        assert await store.claim_pause(replace(claim_of(refused, None), status="declined"))
        assert await store.claim_pause(replace(claim_of(dropped, None), status="cancelled"))
        await store.seal_audit()
        trail = await store.audit_records(after=0, limit=100)
        answers = [(r.pause_id, r.decision) for r in trail if r.event == "answered"]
        # What a record said when it was written stays: the chain is never rewritten.
        assert answers == [
            ("p0", "answered"), ("p1", "answered"), ("p2", "answered"),
            (refused.pause_id, "declined"), (dropped.pause_id, "cancelled"),
        ]
        assert await verify_log(store) == (len(trail), None)
