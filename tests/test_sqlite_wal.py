"""The embedded store's WAL stays bounded however long the load lasts.

Under steady writes a checkpoint that waits for nobody never catches up with
the newest commit, and SQLite starts its WAL over only once one has: the file
then grows for as long as the load lasts (19 GB after 15 minutes of a service
under load). Eight clients cycling turn → pause → resume twenty thousand times
must leave the WAL, at its largest, under 64 MB. This is a size, not a time.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from symfonic import SymfonicAgent
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
        model=model, tools=[send_payment], approval={"send_payment"}, store=f"sqlite:///{path}"
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
