"""A turn's heartbeat: timed from the end of the last beat, never overlapping, never cut
off inside a beat, and going on past a beat that failed."""

from __future__ import annotations

import anyio
import pytest

from symfonic.turns.lease import Heartbeats

pytestmark = pytest.mark.anyio

INTERVAL = 0.02


async def test_beats_never_overlap_and_stop_when_the_work_ends() -> None:
    running, most, beats = 0, 0, 0

    async def slow_beat() -> None:  # longer than the interval
        nonlocal running, most, beats
        running += 1
        most = max(most, running)
        await anyio.sleep(3 * INTERVAL)
        running -= 1
        beats += 1

    async with Heartbeats(slow_beat, INTERVAL):
        await anyio.sleep(0.4)
    assert most == 1
    # Each beat is timed from the end of the last: 0.4 s holds at most 0.4 / 0.08.
    assert 2 <= beats <= 5
    ended = beats
    await anyio.sleep(0.2)
    assert beats == ended, "a beat ran after the work ended"


async def test_a_beat_under_way_when_the_work_ends_finishes_its_write() -> None:
    written: list[str] = []

    async def beat() -> None:
        await anyio.sleep(0.1)
        written.append("renewed")

    async with Heartbeats(beat, INTERVAL):
        await anyio.sleep(2 * INTERVAL)  # the first beat has started, not finished
    assert written == ["renewed"]


async def test_cancelling_the_work_lets_the_beat_under_way_finish_and_no_other_start() -> None:
    started, finished = 0, 0

    async def beat() -> None:
        nonlocal started, finished
        started += 1
        await anyio.sleep(0.1)
        finished += 1

    with anyio.move_on_after(2 * INTERVAL):
        async with Heartbeats(beat, INTERVAL):
            await anyio.sleep(10)
    assert (started, finished) == (1, 1)
    await anyio.sleep(0.1)
    assert started == 1


async def test_a_failing_beat_is_logged_and_the_next_is_still_timed() -> None:
    calls = 0

    async def broken() -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("the lease store is broken")

    async with Heartbeats(broken, INTERVAL):
        await anyio.sleep(0.2)  # the work is not interrupted
    assert calls >= 3


async def test_work_that_ends_before_the_first_beat_never_calls_the_heartbeat() -> None:
    calls = 0

    async def beat() -> None:
        nonlocal calls
        calls += 1

    async with Heartbeats(beat, INTERVAL):
        pass
    await anyio.sleep(3 * INTERVAL)
    assert calls == 0
