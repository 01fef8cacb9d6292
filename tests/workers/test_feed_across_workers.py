"""The live feed across workers: two real ``symfonic serve`` processes on one database.

A client follows worker B's feed while pauses are made through worker A. Each
must reach it within a second of A's answer (PostgreSQL: A's commit notifies
B's listening connection; SQLite: B's watch polls the file). The time from A's
response to B's frame is measured for 20 pauses; the figures are in
docs/storage.md.
"""

from __future__ import annotations

import random
import statistics
import time
from pathlib import Path

import anyio
import httpx
import pytest

from feed_support import FEED, FeedReader
from serve_support import ALICE, serving

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PAUSES = 20
MESSAGE = "Pay alice 42 EUR for the design work"


async def test_a_pause_made_on_worker_a_reaches_a_feed_on_worker_b_within_a_second(
    store_url: str, tmp_path: Path
) -> None:
    arrived: dict[str, float] = {}
    answered: dict[str, float] = {}
    with serving(store_url, tmp_path / "a.log") as a, serving(store_url, tmp_path / "b.log") as b:
        async with (
            httpx.AsyncClient(base_url=a.url, headers=ALICE, timeout=10) as on_a,
            httpx.AsyncClient(base_url=b.url, headers=ALICE, timeout=10) as on_b,
            on_b.stream("GET", FEED) as response,
            anyio.create_task_group() as tasks,
        ):
            feed = FeedReader(response)
            assert (await feed.next()).event == "pauses.snapshot"

            send, receive = anyio.create_memory_object_stream[str](PAUSES)

            async def follow() -> None:
                while True:
                    frame = await feed.next(wait=30)
                    if frame.event == "pause.created":
                        arrived[frame.data["pause_id"]] = time.monotonic()
                        await send.send(frame.data["pause_id"])

            tasks.start_soon(follow)
            for _ in range(PAUSES):
                # Out of step with SQLite's polling, as real requests are.
                await anyio.sleep(random.uniform(0, 0.25))
                session_id = (await on_a.post("/v1/sessions", json={})).json()["session_id"]
                turn = await on_a.post(
                    f"/v1/sessions/{session_id}/turns", json={"message": MESSAGE}
                )
                answered_at = time.monotonic()
                pause_id = turn.text.split('"pause_id":"', 1)[1].split('"', 1)[0]
                answered[pause_id] = answered_at
                with anyio.fail_after(1.0):
                    while pause_id not in arrived:
                        await receive.receive()
            tasks.cancel_scope.cancel()
    # Negative: the frame reached B before A had finished sending its own answer.
    latencies = sorted(arrived[p] - answered[p] for p in answered)
    median, worst = statistics.median(latencies), latencies[-1]
    print(f"\n{store_url.split(':')[0]}: A's answer to B's frame over {PAUSES} pauses: "
          f"median {median * 1000:.0f} ms, max {worst * 1000:.0f} ms")
    assert worst < 1.0
