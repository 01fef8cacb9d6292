"""The embedded store's WAL stays bounded however long the load lasts.

Under steady writes a checkpoint that waits for nobody never catches up with
the newest commit, and SQLite starts its WAL over only once one has: the file
then grows for as long as the load lasts (19 GB after 15 minutes of a service
under load). Eight clients cycling turn → pause → resume twenty thousand times
must leave the WAL, at its largest, under 64 MB. This is a size, not a time,
and the same under either ``synchronous`` level: the cycles run under NORMAL so
that 100,000 commits do not each wait for the disk.
"""

from __future__ import annotations

import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from symfonic import SymfonicAgent
from symfonic.core.contracts.store import SessionRecord
from symfonic.storage import open_store
from symfonic.storage.sqlite_checkpoints import CHECKPOINT_EVERY
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio

CYCLES = 20_000
CLIENTS = 8
WAL_BOUND = 64 * 1024 * 1024


def send_payment(amount: int, to: str) -> str:
    """Send money."""
    return f"sent {amount} to {to}"


def _size(path: Path) -> int:
    """The file's size, 0 before SQLite has created it (a stat is far cheaper than a cycle)."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


async def test_the_wal_stays_under_64_mb_through_20000_cycles(tmp_path: Path) -> None:
    path = tmp_path / "symfonic.db"
    wal = Path(f"{path}-wal")
    model = ScriptedChatModel.from_script(
        [call("send_payment", {"amount": 5, "to": "bob"}), reply("Paid bob 5.")]
    )
    agent = SymfonicAgent(
        model=model,
        tools=[send_payment],
        approval={"send_payment"},
        store=f"sqlite:///{path}?synchronous=normal",
    )
    started = 0
    largest = 0

    async def client() -> None:
        nonlocal started, largest
        while started < CYCLES and largest < WAL_BOUND:
            started += 1
            paused = await agent.run("pay bob 5")
            assert paused.pause is not None
            done = await agent.resume(paused.pause.token, {"decision": "approve"})
            assert done.status == "complete"
            largest = max(largest, _size(wal))

    async with agent, anyio.create_task_group() as clients:
        for _ in range(CLIENTS):
            clients.start_soon(client)
    assert largest < WAL_BOUND, f"the WAL reached {largest / 2**20:.0f} MB after {started} cycles"
    assert started >= CYCLES


async def test_a_reader_holding_an_old_snapshot_does_not_stall_the_writes(
    tmp_path: Path,
) -> None:
    """The checkpoint waits for readers of older snapshots, and writers wait behind
    it: a reader that keeps one for long (another process's report, a backup)
    costs a write a short wait at most, never the 30 s busy timeout."""
    path = tmp_path / "symfonic.db"
    async with open_store(f"sqlite:///{path}") as store:
        await store.create_session(SessionRecord("first", "ann", "a", 0, {}, datetime.now(UTC)))
        reader = sqlite3.connect(path, isolation_level=None)
        try:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM symfonic_sessions").fetchone()
            slowest = 0.0
            for number in range(CHECKPOINT_EVERY + 10):  # past one checkpoint
                started = anyio.current_time()
                record = SessionRecord(f"s{number}", "ann", "a", 0, {}, datetime.now(UTC))
                await store.create_session(record)
                slowest = max(slowest, anyio.current_time() - started)
            assert slowest < 3.0, f"a write waited {slowest:.1f} s behind the checkpoint"
            assert await store.get_session(f"s{CHECKPOINT_EVERY + 9}") is not None
        finally:
            reader.close()
