"""``python -m bench.scale``: one store grown to 1k, 10k and 100k pending pauses, on each store.

At each size, side by side in one run: a first turn that pauses and a resume,
through the store's port; inboxes through the port and through HTTP
(:mod:`bench.scale_http`); a sweep of 10k expiries and ``symfonic prune`` in
another process, each while a probe on the same event loop, as a request in the
same worker, writes and reads every ``PERIOD`` seconds and a ticker measures how
late the loop wakes it; the store's bytes per pending pause. The pending pauses
are bulk-loaded (:mod:`bench.scale_load`): 100k first turns through the service
take longer than a run may. The ratios 100k / 1k are printed at the end; every
figure and what it times: docs/scale.md.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import anyio
import asyncpg

from bench.scale_http import http_figures
from bench.scale_load import SCOPE, STEADY, STEADY_PAUSES, Layout, load_pending, pause_id
from bench.stats import p50_p95_ms, timed
from bench.stores import DEFAULT_POSTGRES_URL, fresh_store
from symfonic.core.contracts.store import (
    CheckpointRecord,
    Claim,
    NewPause,
    PauseQuery,
    PauseRecord,
    ResumePublish,
    RunRequest,
    SessionRecord,
    Store,
)
from symfonic.core.contracts.types import InteractionKind, PauseState
from symfonic.storage import open_store

SIZES = (1_000, 10_000, 100_000)
TURNS = 200
LISTS = 50
EXPIRIES = 10_000
PERIOD = 0.01
TICK = 0.005
NOW = datetime.now(UTC)
DAY = timedelta(days=1)
Figures = dict[str, float]
T = TypeVar("T")


def _pause(session_id: str) -> PauseRecord:
    return PauseRecord(
        pause_id=uuid.uuid4().hex,
        session_id=session_id,
        principal="user7",
        agent="assistant",
        audience=None,
        kind=InteractionKind.APPROVAL,
        query="pay bob?",
        response_schema={"type": "boolean"},
        tool_call_id="call_1",
        interrupt_id="int_1",
        base_revision=0,
        state=PauseState.PENDING,
        created_at=NOW,
        expires_at=NOW + timedelta(days=7),
    )


async def _first_turn(store: Store) -> PauseRecord:
    session_id = uuid.uuid4().hex
    await store.create_session(SessionRecord(session_id, "user7", "assistant", 0, {}, NOW))
    lease = NOW + timedelta(minutes=5)
    run = RunRequest(session_id, "r", NOW, lease, "user7", 0, refuse_pending=True)
    assert await store.begin_run(run) is not None
    pause = _pause(session_id)
    checkpoint = CheckpointRecord(pause.pause_id, session_id, 1, 0, {"turn": []})
    await store.record_pause(NewPause(pause, checkpoint, run_id="r"))
    return pause


async def _resume(store: Store, pause: PauseRecord) -> None:
    claim_id = uuid.uuid4().hex
    lease = NOW + timedelta(minutes=5)
    claim = Claim(pause.pause_id, claim_id, "user7", True, "approved", NOW, lease)
    assert await store.claim_pause(claim) is not None
    turn = [{"role": "ai", "content": "paid"}]
    await store.publish_resume(ResumePublish(pause.session_id, claim_id, turn, "yes"))


async def _turns(store: Store, figures: Figures) -> None:
    pauses: list[PauseRecord] = []
    firsts: list[float] = []
    started = time.perf_counter()
    for _ in range(TURNS):
        begun = time.perf_counter()
        pauses.append(await _first_turn(store))
        firsts.append(time.perf_counter() - begun)
    figures["creation/s"] = TURNS / (time.perf_counter() - started)
    figures["first turn p50"], figures["first turn p95"] = p50_p95_ms(firsts)
    resumes = [await timed(lambda p=p: _resume(store, p)) for p in pauses]  # type: ignore[misc]
    figures["resume p50"], figures["resume p95"] = p50_p95_ms(resumes)


async def _lists(store: Store, figures: Figures) -> None:
    inboxes: tuple[tuple[str, str, set[str] | frozenset[str]], ...] = (
        ("own user7", "user7", frozenset()),
        ("own 60", STEADY, frozenset()),
        ("scope", "carol", {SCOPE}),
    )
    for who, principal, scopes in inboxes:
        query = PauseQuery(PauseState.PENDING, principal, frozenset(scopes), limit=50)
        seconds = [await timed(lambda q=query: store.list_pauses(q)) for _ in range(LISTS)]  # type: ignore[misc]
        figures[f"list {who} p50"], figures[f"list {who} p95"] = p50_p95_ms(seconds)


@dataclass
class Waits:
    """The worst waits seen, in seconds."""

    write: float = 0.0
    read: float = 0.0
    loop: float = 0.0

    @property
    def worst(self) -> float:
        return max(self.write, self.read, self.loop)


async def _probe(store: Store, pause_id: str, waits: Waits) -> None:
    while True:
        started = time.perf_counter()
        session = SessionRecord(uuid.uuid4().hex, "probe", "assistant", 0, {}, datetime.now(UTC))
        await store.create_session(session)
        wrote = time.perf_counter()
        await store.get_pause(pause_id)
        read = time.perf_counter()
        waits.write = max(waits.write, wrote - started)
        waits.read = max(waits.read, read - wrote)
        await anyio.sleep(PERIOD)


async def _tick(waits: Waits) -> None:
    while True:
        started = time.perf_counter()
        await anyio.sleep(TICK)
        waits.loop = max(waits.loop, time.perf_counter() - started - TICK)


async def while_probed(store: Store, pause_id: str, work: Awaitable[T]) -> tuple[T, float, Waits]:
    """Run ``work`` with the probe beside it: its result, its seconds, the worst waits."""
    waits = Waits()
    async with anyio.create_task_group() as group:
        group.start_soon(_probe, store, pause_id, waits)
        group.start_soon(_tick, waits)
        await anyio.sleep(0.05)  # the probe is running before the work starts
        started = time.perf_counter()
        result = await work
        seconds = time.perf_counter() - started
        await anyio.sleep(0.05)
        group.cancel_scope.cancel()
    return result, seconds, waits


async def _sweep(store: Store, url: str, size: int, figures: Figures) -> None:
    old = NOW - timedelta(days=60)
    await load_pending(url, Layout(EXPIRIES, 10_000_000 + size, created=old, expires_in=DAY))
    report, seconds, waits = await while_probed(store, pause_id(1), store.sweep(NOW))
    assert report.expired == EXPIRIES, report
    figures["sweep s"] = seconds
    # A request arriving during the sweep waits for the loop, then for its write.
    figures["sweep worst request ms"] = waits.worst * 1000
    figures["sweep worst write ms"] = waits.write * 1000
    figures["sweep worst read ms"] = waits.read * 1000
    figures["sweep worst loop lag ms"] = waits.loop * 1000


def _prune_process(url: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "symfonic", "prune", "--older-than", "30d", "--store", url]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, env=dict(os.environ))


async def _prune(store: Store, url: str, figures: Figures) -> None:
    async def prune_elsewhere() -> int:
        process = _prune_process(url)
        return await anyio.to_thread.run_sync(process.wait)

    code, seconds, waits = await while_probed(store, pause_id(1), prune_elsewhere())
    assert code == 0, code
    figures["prune s"] = seconds
    figures["prune worst write ms"] = waits.write * 1000
    figures["prune worst loop lag ms"] = waits.loop * 1000


async def _postgres(url: str, statement: str) -> Any:
    """``statement``'s first value, on a connection of its own to the store at ``url``."""
    connection = await asyncpg.connect("postgresql://" + url.partition("://")[2])
    try:
        return await connection.fetchval(statement)
    finally:
        await connection.close()


async def _bytes(url: str, pending: int, figures: Figures) -> None:
    if url.startswith("sqlite"):
        connection = sqlite3.connect(url.removeprefix("sqlite:///"))
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        free = connection.execute("PRAGMA freelist_count").fetchone()[0]
        size = connection.execute("PRAGMA page_size").fetchone()[0]
        connection.close()
        used = (pages - free) * size
        figures["free pages %"] = 100 * free / pages
    else:
        used = await _postgres(
            url,
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c"
            " WHERE c.relkind = 'r' AND c.relname LIKE 'symfonic_%'",
        )
    figures["bytes/pending"] = used / pending


async def _settle(url: str) -> None:
    """What autovacuum does after a bulk insert, with its default settings.

    It vacuums and analyses a table once 1,000 + 20% of its rows were inserted,
    setting the visibility map an index-only scan (a scope's ``total``) needs.
    The test server runs with autovacuum off, so the benchmark does it itself.
    """
    if url.startswith("postgresql"):
        await _postgres(url, "VACUUM ANALYZE symfonic_sessions, symfonic_pauses")


async def _grow(url: str, sizes: tuple[int, ...]) -> dict[int, Figures]:
    results: dict[int, Figures] = {}
    loaded = 0
    async with open_store(url) as store:
        steady = Layout(STEADY_PAUSES, start=30_000_000, created=NOW, owner=STEADY)
        await load_pending(url, steady)
        for size in sizes:
            await load_pending(url, Layout(size - loaded, start=loaded, created=NOW))
            loaded = size
            await _settle(url)
            figures: Figures = {}
            await _turns(store, figures)
            await _lists(store, figures)
            await http_figures(url, figures)
            await _sweep(store, url, size, figures)
            await _prune(store, url, figures)
            await _bytes(url, size, figures)
            results[size] = figures
            print(f"{url.partition(':')[0]} {size}: {figures}", flush=True)
    return results


def _table(results: dict[str, dict[int, Figures]]) -> str:
    sizes = sorted({size for by_size in results.values() for size in by_size})
    head = ["store", "figure", *(f"{size:,}" for size in sizes), "ratio"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for store, by_size in results.items():
        for name in by_size[sizes[0]]:
            values = [by_size[size][name] for size in sizes if size in by_size]
            ratio = values[-1] / values[0] if values[0] else float("nan")
            cells = [store, name, *(f"{value:,.1f}" for value in values), f"{ratio:.2f}"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument(
        "--postgres", default=os.environ.get("SYMFONIC_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    )
    parser.add_argument("--out", type=Path, help="write the Markdown table here as well")
    args = parser.parse_args(argv)
    sizes = tuple(int(size) for size in args.sizes.split(","))
    results: dict[str, dict[int, Figures]] = {}
    for store in args.stores.split(","):
        server = "sqlite" if store == "sqlite" else args.postgres
        folder = Path(tempfile.mkdtemp(prefix="symfonic-scale-"))
        with fresh_store(server, folder, f"symfonic_scale_{uuid.uuid4().hex[:8]}") as url:
            results[store] = anyio.run(_grow, url, sizes)
    table = _table(results)
    print(table)
    if args.out is not None:
        args.out.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
