"""A turn, a pause and its answer cost the same however many other pauses wait.

50,000 pending pauses are loaded straight into the tables, then one session goes
through every hot step of the port (a first turn, its pause, the session's open
pause, the inboxes of a principal and of a scope holder, a claim, a resume, a
sweeper's pass), and each statement the store ran is explained by the database itself.
None may read the pending pauses wide (see ``plans_support``). Each database is
asked twice: as a fresh store finds its tables (SQLite never analysed;
PostgreSQL with autovacuum off, so never analysed either) and after ``ANALYZE``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import anyio
import pytest
from bench.scale_load import SCOPE, Layout, load_pending

from plans_support import (
    Recorded,
    plan_nodes,
    postgres_plan,
    postgres_scans,
    record_statements,
    sqlite_plan,
    sqlite_scans,
)
from symfonic.core.contracts.store import (
    CheckpointRecord,
    Claim,
    NewPause,
    PausePosition,
    PauseQuery,
    PauseRecord,
    ResumePublish,
    RunRequest,
    SessionRecord,
)
from symfonic.core.contracts.types import InteractionKind, PauseState
from symfonic.storage import open_store
from symfonic.storage.pause_listing import count_rows
from symfonic.storage.pause_sweep import EXPIRE, SWEEP_BATCH
from symfonic.storage.sql_store import SqlStore
from symfonic.storage.statements import Dialect, Params, Statement

pytestmark = pytest.mark.anyio

WAITING = 50_000
LAYOUT = Layout(WAITING)
T0 = LAYOUT.created + timedelta(hours=1)
TABLES = ("symfonic_sessions", "symfonic_pauses", "symfonic_messages", "symfonic_pause_events")


async def _analyse(url: str, analysed: bool) -> None:
    if url.startswith("sqlite"):
        if analysed:
            import sqlite3

            from symfonic.storage.sqlite_file import path_of

            connection = sqlite3.connect(path_of(url))
            connection.execute("ANALYZE")
            connection.commit()
            connection.close()
        return
    import asyncpg

    connection = await asyncpg.connect("postgresql://" + url.partition("://")[2])
    try:
        for table in TABLES:
            if analysed:
                await connection.execute(f"ANALYZE {table}")
            else:
                await connection.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
    finally:
        await connection.close()


@pytest.fixture(params=["never analysed", "analysed"])
async def crowded(request: pytest.FixtureRequest, store_url: str) -> AsyncIterator[str]:
    """A store with 50,000 pauses waiting, analysed or not."""
    analysed = request.param == "analysed"
    async with open_store(store_url):
        pass  # migrated
    await _analyse(store_url, analysed=False)
    await load_pending(store_url, LAYOUT)
    if analysed:
        await _analyse(store_url, analysed=True)
    yield store_url


def _pause(session_id: str, principal: str, audience: str | None) -> PauseRecord:
    return PauseRecord(
        pause_id=uuid.uuid4().hex,
        session_id=session_id,
        principal=principal,
        agent="assistant",
        audience=audience,
        kind=InteractionKind.APPROVAL,
        query="pay bob?",
        response_schema={"type": "boolean"},
        tool_call_id="call_1",
        interrupt_id="int_1",
        base_revision=0,
        state=PauseState.PENDING,
        created_at=T0,
        expires_at=T0 + timedelta(hours=1),
    )


async def _one_of_each(store: SqlStore) -> None:
    """One session through every step a turn and its answer take."""
    session_id = uuid.uuid4().hex
    await store.create_session(SessionRecord(session_id, "user7", "assistant", 0, {}, T0))
    lease = T0 + timedelta(minutes=1)
    first = RunRequest(session_id, "r1", T0, lease, "user7", 0, refuse_pending=True)
    assert await store.begin_run(first) is not None
    pause = _pause(session_id, "user7", SCOPE)
    checkpoint = CheckpointRecord(pause.pause_id, session_id, 1, 0, {"turn": []})
    await store.record_pause(NewPause(pause, checkpoint, run_id="r1"))
    # A turn beside a waiting pause: counted, not refused.
    assert await store.begin_run(RunRequest(session_id, "r2", T0, lease, "user7")) is not None
    await store.end_run(session_id, "r2")
    assert await store.open_pause(session_id) is not None
    await store.session_pauses(session_id)
    for principal, scopes in (("user7", frozenset()), ("carol", frozenset({SCOPE}))):
        await _inbox(store, principal, scopes)
    await store.get_pause(pause.pause_id)
    claim = Claim(pause.pause_id, "c1", "carol", True, "approved", T0, lease)
    assert await store.claim_pause(claim) is not None
    await store.claimed_pause(session_id, "c1")
    await store.renew_claim(session_id, "c1", lease)
    publish = ResumePublish(session_id, "c1", [{"role": "ai", "content": "paid"}], "yes")
    await store.publish_resume(publish)
    await store.abandon_pending(session_id)
    await store.announce_expiring(T0, 3600)
    await store.sweep(T0)


async def _inbox(store: SqlStore, principal: str, scopes: frozenset[str]) -> None:
    """Two pages of an inbox and its total, as the service asks for them."""
    query = PauseQuery(
        PauseState.PENDING,
        principal,
        scopes,
        limit=51,
        agents=frozenset({"assistant"}),
        unexpired_at=T0,
    )
    first = await store.list_pauses(query)
    await store.count_pauses(query)
    await store.list_pauses(replace(query, after=PausePosition.of(first[-1])))


async def _explain(url: str, recorded: Recorded) -> dict[str, list[str]]:
    wide: dict[str, list[str]] = {}
    for text, (statement, params) in recorded.items():
        if url.startswith("sqlite"):
            found = await anyio.to_thread.run_sync(sqlite_scans, url, statement, params)
        else:
            found = await postgres_scans(url, statement, params)
        if found:
            wide[text] = found
    return wide


async def test_no_hot_statement_reads_every_waiting_pause(crowded: str) -> None:
    async with open_store(crowded) as store:
        assert isinstance(store, SqlStore)
        recorded = record_statements(store)
        await _one_of_each(store)
    assert any("symfonic_pauses" in text for text in recorded)
    wide = await _explain(crowded, recorded)
    assert wide == {}, "\n\n".join(f"{text}\n  -> {steps}" for text, steps in wide.items())


async def _vacuumed(url: str) -> None:
    """As autovacuum with its defaults leaves a table after a bulk insert: analysed,
    and on PostgreSQL with a visibility map (``autovacuum_vacuum_insert_threshold``)."""
    if url.startswith("sqlite"):
        await _analyse(url, analysed=True)
        return
    import asyncpg

    connection = await asyncpg.connect("postgresql://" + url.partition("://")[2])
    try:
        await connection.execute("VACUUM ANALYZE symfonic_pauses")
    finally:
        await connection.close()


async def _reads(url: str, statement: Statement, params: Params, table: str) -> list[str]:
    """The ways the statement's plan reads ``table``."""
    if url.startswith("sqlite"):
        details = sqlite_plan(url, statement, params)
        return [d.partition(" (")[0] for d in details if re.search(rf"\b{table}\b", d)]
    return [
        # A bitmap heap scan reads the table through the index scans beneath it.
        " ".join([node["Node Type"], *(n.get("Index Name", "") for n in plan_nodes(node))]).strip()
        for node in await postgres_plan(url, statement, params)
        if node.get("Relation Name") == table
    ]


def _carols(**fields: Any) -> PauseQuery:
    """The inbox total of ``carol``, who holds the scope: one pause in eight."""
    return PauseQuery(
        PauseState.PENDING,
        "carol",
        frozenset({SCOPE}),
        limit=51,
        agents=frozenset({"assistant"}),
        unexpired_at=T0,
        **fields,
    )


async def test_a_scope_holders_total_reads_the_tally_and_the_pauses_due(crowded: str) -> None:
    # The tally's rows of carol's two ranges by its key, less the pauses of those
    # ranges already due, read through the sweep's index: none of the 6,250 waiting.
    async with open_store(crowded) as store:
        assert isinstance(store, SqlStore)
        recorded = record_statements(store)
        assert await store.count_pauses(_carols()) == WAITING // 8
    # The pauses carol kept after an escalation, which no tally holds, are their
    # own count, read by primary key from the kept audiences' table.
    kept = [v for text, v in recorded.items() if "symfonic_pause_audiences" in text]
    assert len(kept) == 1
    kept_reads = await _reads(crowded, *kept[0], "symfonic_pauses")
    assert all(read.endswith(("_1", "pkey")) for read in kept_reads), kept_reads
    ((statement, params),) = [v for text, v in recorded.items() if "pause_audiences" not in text]
    tally = await _reads(crowded, statement, params, "symfonic_pending_tally")
    pauses = await _reads(crowded, statement, params, "symfonic_pauses")
    if crowded.startswith("sqlite"):
        key = "sqlite_autoindex_symfonic_pending_tally_1"
        assert tally == [f"SEARCH symfonic_pending_tally USING INDEX {key}"] * 2, tally
        assert pauses == ["SEARCH symfonic_pauses USING INDEX ix_symfonic_pauses_due"], pauses
    else:
        assert tally == ["Index Scan pk_symfonic_pending_tally"] * 2, tally
        assert [read.split()[-1] for read in pauses] == ["ix_symfonic_pauses_due"], pauses


async def test_a_total_counted_row_by_row_reads_the_index_alone(store_url: str) -> None:
    # A total the tally cannot give (a text filter, another state) counts every
    # pause of its ranges (6,250 here): from the index wherever it holds the
    # filters, not one table row (and page) each for the agent, expiry and
    # delegate conditions.
    async with open_store(store_url):
        pass
    await _analyse(store_url, analysed=False)
    await load_pending(store_url, LAYOUT)
    await _vacuumed(store_url)
    async with open_store(store_url) as store:
        assert isinstance(store, SqlStore)
        recorded = record_statements(store)
        assert await count_rows(store, _carols()) == WAITING // 8
    ((statement, params),) = recorded.values()
    reads = await _reads(store_url, statement, params, "symfonic_pauses")
    # The pauses the principal kept after an escalation are read by primary key,
    # one each, from the kept audiences' table (none here).
    by_key = ("sqlite_autoindex_symfonic_pauses_1", "symfonic_pauses_pkey")
    assert sum(read.endswith(by_key) for read in reads) == 1, reads
    reads = [read for read in reads if not read.endswith(by_key)]
    assert len(reads) == 2, reads
    if store_url.startswith("sqlite"):
        assert all("USING COVERING INDEX" in read for read in reads), reads
    else:
        assert all(read.startswith("Index Only Scan") for read in reads), reads


async def test_a_sweep_batch_reads_its_own_pauses_however_many_are_due(crowded: str) -> None:
    # 4,000 pauses due at once, as after a deployment whose pauses all expire
    # together or a restore: each batch of the expiry picks its pauses once from
    # the sweep's index and updates them by primary key. Found through the due
    # index a second time, every batch would read all 4,000, and on a PostgreSQL
    # table never analysed join them to the batch row by row (seconds a sweep).
    due_at = LAYOUT.created + LAYOUT.expires_in + timedelta(milliseconds=3999)
    dialect = Dialect.SQLITE if crowded.startswith("sqlite") else Dialect.POSTGRESQL
    params = {"now": due_at, "batch": SWEEP_BATCH}
    reads = await _reads(crowded, EXPIRE[dialect], params, "symfonic_pauses")
    # PostgreSQL's update node names the table it writes: not a read.
    reads = [read for read in reads if not read.startswith("ModifyTable")]
    due = [read for read in reads if read.endswith("ix_symfonic_pauses_due")]
    by_key = [read for read in reads if read.endswith(("_1", "pkey"))]
    assert len(due) == 1 and len(by_key) == 1 and len(reads) == 2, reads
    async with open_store(crowded) as store:
        assert (await store.sweep(due_at)).expired == 4000
