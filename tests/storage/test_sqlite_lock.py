"""Another process holding the SQLite write lock never stalls this one's event loop.

SQLite runs this process's transactions on the loop, where they take
microseconds. A lock held by another process must not turn that into a stall:
the write that needs the lock waits for it on a worker thread, and meanwhile
the loop keeps serving everything else, reads included (under WAL a read does
not wait for a writer). The test holds the lock from a real second process for
two seconds while one request writes and another reads.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import pytest
from anyio.streams.text import TextReceiveStream

from symfonic import SymfonicAgent
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HOLD_SECONDS = 2.0
# Far above a loop turn, far below the hold: a loop blocked on the lock would miss it.
LONGEST_LOOP_GAP = 0.25

HOLDER = """
import sqlite3, sys, time
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
connection.execute("COMMIT")
"""


def send_payment(amount: int, to: str) -> str:
    """Send money."""
    return f"sent {amount} to {to}"


async def test_a_lock_held_by_another_process_is_waited_for_off_the_loop(
    tmp_path: Path,
) -> None:
    path = tmp_path / "symfonic.db"
    model = ScriptedChatModel.from_script(
        [call("send_payment", {"amount": 5, "to": "bob"}), reply("Paid bob 5.")]
    )
    agent = SymfonicAgent(
        model=model, tools=[send_payment], approval={"send_payment"}, store=f"sqlite:///{path}"
    )
    async with agent:
        existing = await agent.create_session()
        holder = await anyio.open_process(
            [sys.executable, "-c", HOLDER, str(path), str(HOLD_SECONDS)]
        )
        assert holder.stdout is not None
        async for line in TextReceiveStream(holder.stdout):
            if "locked" in line:
                break
        locked_at = time.monotonic()
        finished: dict[str, float] = {}
        gaps: list[float] = []

        async def write() -> None:
            paused = await agent.run("pay bob 5")  # needs the write lock
            assert paused.status == "paused"
            finished["write"] = time.monotonic() - locked_at

        async def read() -> None:
            assert await agent.store.get_session(existing) is not None
            finished["read"] = time.monotonic() - locked_at

        async def tick() -> None:
            last = time.monotonic()
            while "write" not in finished:
                await anyio.sleep(0.01)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(tick)
            tasks.start_soon(write)
            await anyio.sleep(0.1)  # the write is waiting for the lock by now
            tasks.start_soon(read)
        await holder.wait()

    assert finished["read"] < 0.5, "a read waited for another process's write lock"
    assert finished["write"] >= HOLD_SECONDS * 0.9, "the write did not wait for the lock"
    assert max(gaps) < LONGEST_LOOP_GAP, f"the loop stalled for {max(gaps):.2f} s"
