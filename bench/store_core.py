"""One pause-and-resume cycle's statements: symfonic's statement layer against SQLAlchemy Core.

A cycle makes five steps of the store: mark the run (and read the history),
record the pause (ending the run), read the pause, claim it (and read the
history), publish the resumed turn. ``symfonic`` runs them through the store's
port; ``core`` runs the same SQL through SQLAlchemy 2 on the same driver, the
statements written as Core expressions (the data-modifying ``WITH`` statements
PostgreSQL's steps are stay ``text()``: Core would compile them to the same
SQL). Both make the same statements and transactions on SQLite (the engine's
connection begins with ``BEGIN IMMEDIATE``, as the store's does) and the same
single-statement round trips on PostgreSQL (the engine in autocommit: no
``BEGIN``/``COMMIT``). The two variants alternate in blocks on one database::

    python -m bench.store_core --store sqlite
    python -m bench.store_core --store postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.ext.asyncio import create_async_engine

from bench.store_cycle import _postgres_database
from symfonic.core.contracts.store import (
    CheckpointRecord,
    Claim,
    NewPause,
    PauseRecord,
    ResumePublish,
    RunRequest,
    SessionRecord,
    Store,
)
from symfonic.core.contracts.types import InteractionKind, PauseState
from symfonic.storage import open_store
from symfonic.storage.pause_writes import PUBLISH_RESUME, RECORD_RUN_PAUSE
from symfonic.storage.runs import BEGIN_RUN
from symfonic.storage.schema import messages, pauses, sessions
from symfonic.storage.statements import Dialect

HOUR = timedelta(hours=1)
TURN = [{"role": "human", "content": "pay"}, {"role": "ai", "content": "", "tool_calls": []}]
ANSWER = [{"role": "tool", "content": "sent"}, {"role": "ai", "content": "done"}]


def _pause(session_id: str, now: datetime, revision: int) -> tuple[PauseRecord, CheckpointRecord]:
    pause_id = uuid.uuid4().hex
    pause = PauseRecord(
        pause_id,
        session_id,
        "bench",
        "bench",
        None,
        InteractionKind.APPROVAL,
        "pay?",
        {"type": "object"},
        "call_1",
        "int_1",
        revision,
        PauseState.PENDING,
        now,
        now + HOUR,
    )
    return pause, CheckpointRecord(pause_id, session_id, 1, revision, {"messages": TURN})


async def symfonic_cycle(store: Store, session_id: str) -> None:
    now = datetime.now(UTC)
    run_id = uuid.uuid4().hex
    start = await store.begin_run(RunRequest(session_id, run_id, now=now, lease_until=now + HOUR))
    assert start is not None
    pause, checkpoint = _pause(session_id, now, start.session.revision)
    await store.record_pause(NewPause(pause, checkpoint, run_id=run_id))
    assert await store.get_pause(pause.pause_id) is not None
    claim_id = uuid.uuid4().hex
    claim = Claim(
        pause.pause_id, claim_id, "bench", {"decision": "approve"}, "resolved", now, now + HOUR
    )
    assert await store.claim_pause(claim) is not None
    await store.publish_resume(ResumePublish(session_id, claim_id, ANSWER, "done"))


def _history(session: Any, revision: Any, dialect: str) -> Any:
    if dialect == "postgresql":
        aggregate = sa.func.string_agg(
            sa.cast(messages.c.body, sa.Text),
            aggregate_order_by(sa.literal_column("','"), messages.c.seq),
        )
        return (
            sa.select(aggregate)
            .where(messages.c.session_id == session, messages.c.revision <= revision)
            .scalar_subquery()
        )
    ordered = (
        sa.select(messages.c.body)
        .where(messages.c.session_id == session, messages.c.revision <= revision)
        .order_by(messages.c.seq)
        .subquery()
    )
    return sa.select(sa.func.group_concat(ordered.c.body, ",")).scalar_subquery()


def _core_statements(dialect: str) -> dict[str, Any]:
    waiting = sa.and_(pauses.c.state == "pending", pauses.c.expires_at > sa.bindparam("now"))
    pending = (
        sa.select(sa.func.count())
        .where(pauses.c.session_id == sa.bindparam("sid"), waiting)
        .scalar_subquery()
    )
    begin_run = (
        sa.update(sessions)
        .where(
            sessions.c.session_id == sa.bindparam("sid"),
            sa.or_(sessions.c.run_id.is_(None), sessions.c.run_lease < sa.bindparam("now")),
            ~sa.exists().where(
                pauses.c.session_id == sa.bindparam("sid"), pauses.c.state == "claimed"
            ),
        )
        .values(
            run_id=sa.bindparam("rid"),
            run_lease=sa.bindparam("lease"),
            active_at=sa.bindparam("now"),
        )
        .returning(
            sessions.c.session_id,
            sessions.c.revision,
            sessions.c.principal,
            pending.label("pending"),
        )
    )
    claim = (
        sa.update(pauses)
        .where(
            pauses.c.pause_id == sa.bindparam("pid"),
            pauses.c.state == "pending",
            pauses.c.expires_at > sa.bindparam("now"),
        )
        .values(
            state="claimed",
            claim_id=sa.bindparam("cid"),
            lease_until=sa.bindparam("lease"),
            answered_by="bench",
            answered_at=sa.bindparam("now"),
            answer=sa.bindparam("answer", type_=sa.JSON),
            answer_status="resolved",
        )
    )
    checkpoint_columns = (
        pauses.c.pause_id,
        pauses.c.session_id,
        pauses.c.base_revision,
        pauses.c.checkpoint_format,
        pauses.c.checkpoint,
    )
    if dialect == "postgresql":
        claim = claim.returning(
            *checkpoint_columns,
            _history(pauses.c.session_id, pauses.c.base_revision, dialect).label("history"),
        )
    else:
        claim = claim.returning(*checkpoint_columns)
    return {
        "begin_run": begin_run,
        "history": sa.select(_history(sa.bindparam("sid"), sa.bindparam("rev"), dialect)),
        "end_run": sa.update(sessions)
        .where(
            sessions.c.session_id == sa.bindparam("sid"), sessions.c.run_id == sa.bindparam("rid")
        )
        .values(run_id=None, run_lease=None),
        "insert_pause": sa.insert(pauses),
        "get_pause": sa.select(pauses).where(pauses.c.pause_id == sa.bindparam("pid")),
        "claim": claim,
        "publish_pause": sa.update(pauses)
        .where(
            pauses.c.session_id == sa.bindparam("sid"),
            pauses.c.claim_id == sa.bindparam("cid"),
            pauses.c.state == "claimed",
        )
        .values(
            state="published",
            outcome=sa.bindparam("outcome", type_=sa.JSON),
            checkpoint_format=None,
            checkpoint=None,
        )
        .returning(pauses.c.pause_id, pauses.c.base_revision),
        "bump": sa.update(sessions)
        .where(
            sessions.c.session_id == sa.bindparam("sid"),
            sessions.c.revision == sa.bindparam("base"),
        )
        .values(
            revision=sessions.c.revision + 1,
            message_count=sessions.c.message_count + sa.bindparam("added"),
        )
        .returning(sessions.c.revision, sessions.c.message_count),
        "insert_message": sa.insert(messages),
    }


def _pause_row(pause: PauseRecord, checkpoint: CheckpointRecord) -> dict[str, Any]:
    return {
        "pause_id": pause.pause_id,
        "session_id": pause.session_id,
        "principal": pause.principal,
        "agent": pause.agent,
        "audience": None,
        "kind": pause.kind.value,
        "query": pause.query,
        "response_schema": pause.response_schema,
        "tool_call_id": pause.tool_call_id,
        "interrupt_id": pause.interrupt_id,
        "base_revision": pause.base_revision,
        "state": "pending",
        "created_at": pause.created_at,
        "expires_at": pause.expires_at,
        "checkpoint_format": checkpoint.format_version,
        "checkpoint": checkpoint.body,
    }


def _decoded(history: str | None) -> list[Any]:
    """The history's bodies, decoded as the store decodes them."""
    bodies: list[Any] = json.loads(f"[{history or ''}]")
    return bodies


def sqlite_core_cycle(engine: sa.Engine, core: dict[str, Any], session_id: str) -> None:
    """The SQLite store's statements and transactions, through SQLAlchemy Core."""
    now, rid, cid = datetime.now(UTC), uuid.uuid4().hex, uuid.uuid4().hex
    with engine.begin() as c:
        row = c.execute(
            core["begin_run"], {"sid": session_id, "rid": rid, "lease": now + HOUR, "now": now}
        ).one()
        _decoded(c.execute(core["history"], {"sid": session_id, "rev": row.revision}).scalar())
    pause, checkpoint = _pause(session_id, now, row.revision)
    with engine.begin() as c:
        assert c.execute(core["end_run"], {"sid": session_id, "rid": rid}).rowcount == 1
        c.execute(core["insert_pause"], _pause_row(pause, checkpoint))
    with engine.connect() as c:
        assert c.execute(core["get_pause"], {"pid": pause.pause_id}).one()
        c.rollback()
    with engine.begin() as c:
        won = c.execute(
            core["claim"],
            {
                "pid": pause.pause_id,
                "cid": cid,
                "lease": now + HOUR,
                "now": now,
                "answer": {"decision": "approve"},
            },
        ).one()
        _decoded(c.execute(core["history"], {"sid": session_id, "rev": won.base_revision}).scalar())
    with engine.begin() as c:
        published = c.execute(
            core["publish_pause"],
            {"sid": session_id, "cid": cid, "outcome": {"status": "complete", "answer": "done"}},
        ).one()
        bumped = c.execute(
            core["bump"], {"sid": session_id, "base": published.base_revision, "added": len(ANSWER)}
        ).one()
        start = bumped.message_count - len(ANSWER)
        c.execute(
            core["insert_message"],
            [
                {
                    "session_id": session_id,
                    "seq": start + i,
                    "revision": bumped.revision,
                    "body": body,
                }
                for i, body in enumerate(ANSWER)
            ],
        )


async def postgres_core_cycle(engine: Any, core: dict[str, Any], session_id: str) -> None:
    """The PostgreSQL store's single-statement steps, through SQLAlchemy's async engine."""
    now, rid, cid = datetime.now(UTC), uuid.uuid4().hex, uuid.uuid4().hex
    async with engine.connect() as c:
        row = (
            await c.execute(
                sa.text(BEGIN_RUN[Dialect.POSTGRESQL].text),
                {
                    "session_id": session_id,
                    "run_id": rid,
                    "now": now,
                    "lease_until": now + HOUR,
                    "principal": None,
                    "base_revision": None,
                    "refuse_pending": False,
                },
            )
        ).one()
        _decoded(row.history)
        pause, checkpoint = _pause(session_id, now, row.revision)
        params = _pause_row(pause, checkpoint)
        params.update(
            response_schema=json.dumps(pause.response_schema),
            checkpoint=json.dumps(checkpoint.body),
            supersedes=None,
            run_id=rid,
        )
        params.pop("state")
        (await c.execute(sa.text(RECORD_RUN_PAUSE.text), params)).one()
        (await c.execute(core["get_pause"], {"pid": pause.pause_id})).one()
        won = (
            await c.execute(
                core["claim"],
                {
                    "pid": pause.pause_id,
                    "cid": cid,
                    "lease": now + HOUR,
                    "now": now,
                    "answer": {"decision": "approve"},
                },
            )
        ).one()
        _decoded(won.history)
        (
            await c.execute(
                sa.text(PUBLISH_RESUME.text),
                {
                    "session_id": session_id,
                    "claim_id": cid,
                    "outcome": json.dumps({"status": "complete", "answer": "done"}),
                    "added": len(ANSWER),
                    "bodies": [json.dumps(b) for b in ANSWER],
                },
            )
        ).one()


Cycle = Callable[[str], Awaitable[None]]


async def _timed(store: Store, blocks: int, cycles: int, variants: dict[str, Cycle]) -> None:
    """Each variant's median client CPU and wall time per cycle, blocks alternating."""
    figures: dict[str, list[float]] = {name: [] for name in variants}
    for run in variants.values():
        warm = await _session(store)
        for _ in range(20):
            await run(warm)
    for block in range(blocks):
        names = list(variants) if block % 2 == 0 else list(reversed(variants))
        for name in names:
            # A fresh session per block: the history stays a few messages long.
            session_id = await _session(store)
            cpu = time.process_time()
            started = time.perf_counter()
            for _ in range(cycles):
                await variants[name](session_id)
            wall, used = time.perf_counter() - started, time.process_time() - cpu
            figures[name].append(used / cycles * 1e6)
            figures.setdefault(name + " wall", []).append(wall / cycles * 1e6)
    for name, values in figures.items():
        print(f"{name:14} median {statistics.median(values):7.0f} us/cycle")


async def _session(store: Store) -> str:
    session_id = uuid.uuid4().hex
    await store.create_session(
        SessionRecord(session_id, "bench", "bench", 0, {}, datetime.now(UTC))
    )
    return session_id


async def measure(url: str, blocks: int, cycles: int) -> None:
    async with open_store(url) as store:
        if url.startswith("sqlite"):
            engine = sa.create_engine(url.replace("sqlite:", "sqlite+pysqlite:"))

            @event.listens_for(engine, "connect")
            def _connect(dbapi: Any, _record: Any) -> None:
                # As the store's own connection on the loop: no sync per commit, no
                # checkpoint on it (the store's checkpoints cover the file).
                dbapi.isolation_level = None
                dbapi.execute("PRAGMA synchronous=NORMAL")
                dbapi.execute("PRAGMA wal_autocheckpoint=0")

            @event.listens_for(engine, "begin")
            def _begin(connection: sa.Connection) -> None:
                connection.exec_driver_sql("BEGIN IMMEDIATE")

            core = _core_statements("sqlite")

            async def core_cycle(session_id: str) -> None:
                sqlite_core_cycle(engine, core, session_id)
        else:
            engine = create_async_engine(
                url.replace("postgresql:", "postgresql+asyncpg:"),
                pool_size=2,
                isolation_level="AUTOCOMMIT",
            )
            core = _core_statements("postgresql")

            async def core_cycle(session_id: str) -> None:
                await postgres_core_cycle(engine, core, session_id)

        async def symfonic(session_id: str) -> None:
            await symfonic_cycle(store, session_id)

        await _timed(store, blocks, cycles, {"symfonic": symfonic, "core": core_cycle})
        if url.startswith("sqlite"):
            engine.dispose()
        else:
            await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--store", default="sqlite")
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--cycles", type=int, default=200)
    options = parser.parse_args()
    if options.store == "sqlite":
        with tempfile.TemporaryDirectory() as directory:
            url = f"sqlite:///{Path(directory) / 'core.db'}"
            asyncio.run(measure(url, options.blocks, options.cycles))
        return
    url, drop = _postgres_database(options.store)
    try:
        asyncio.run(measure(url, options.blocks, options.cycles))
    finally:
        drop()


if __name__ == "__main__":
    main()
