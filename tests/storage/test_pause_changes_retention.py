"""Retention deletes the recorded changes of the pauses it deletes, and trims old ones.

The record is always trimmed from its oldest end, so a position the store still
replays from has every change after it; the newest change stays as the feed's
position. Real stores, both of them.
"""

from __future__ import annotations

import sqlite3
from datetime import timedelta

import pytest

from symfonic.storage.sqlite_file import path_of
from test_retention import LONG_AGO, MONTH, NOW, Clock, _agent, _answered_session

pytestmark = pytest.mark.anyio


async def recorded_changes(store_url: str, session_id: str) -> int:
    """The rows of the change record for one session, read around the port."""
    query = "SELECT count(*) FROM symfonic_pause_events WHERE session_id = "
    if store_url.startswith("sqlite"):
        with sqlite3.connect(path_of(store_url)) as connection:
            return int(connection.execute(query + "?", (session_id,)).fetchone()[0])
    import asyncpg

    connection = await asyncpg.connect(store_url)
    try:
        return int(await connection.fetchval(query + "$1", session_id))
    finally:
        await connection.close()


async def test_pruning_a_session_deletes_its_pauses_changes(store_url: str) -> None:
    clock = Clock(LONG_AGO)
    async with _agent(store_url, clock) as agent:
        old = await _answered_session(agent)
        assert await recorded_changes(store_url, old) == 3  # created, claimed, answered
        before_recent = await agent.store.pause_change_position()
        clock.at = NOW - timedelta(days=1)
        recent = await _answered_session(agent)
        clock.at = NOW
        assert (await agent.prune(MONTH)).sessions == 1
        assert await recorded_changes(store_url, old) == 0
        assert await recorded_changes(store_url, recent) == 3
        # What is left replays whole; from before the deleted changes, nothing does.
        replay = await agent.store.pause_changes_since(before_recent, limit=10)
        assert replay is not None
        assert [c.pause.session_id for c in replay if c.position > before_recent] == [recent] * 3
        assert await agent.store.pause_changes_since(0, limit=10) is None


async def test_changes_older_than_the_retention_are_trimmed_but_the_newest(
    store_url: str,
) -> None:
    clock = Clock(NOW)
    async with _agent(store_url, clock) as agent:
        answered = await _answered_session(agent)
        waiting = await agent.run("pay bob 5")
        position = await agent.store.pause_change_position()
        # A month from now, every change recorded today is older than the retention.
        clock.at = NOW + MONTH.older_than + timedelta(days=1)
        await agent.prune(MONTH)
        assert await recorded_changes(store_url, answered) == 0
        assert await recorded_changes(store_url, waiting.session_id) == 1  # the newest
        assert await agent.store.pause_change_position() == position
        replay = await agent.store.pause_changes_since(position, limit=10)
        assert replay is not None and [c for c in replay if c.position > position] == []
        assert await agent.store.pause_changes_since(position - 2, limit=10) is None
