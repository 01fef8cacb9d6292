"""The record of pause changes, written by the database's triggers, on both stores.

Each transition of a pause -- created, claimed, answered, expired, abandoned,
superseded -- leaves exactly one change, in order, in the transaction that
made it: a transition that rolls back leaves none. A watch sees the changes
another worker commits; a replay after a position misses none, even where
PostgreSQL commits a later-numbered change first.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from datetime import timedelta

import anyio
import pytest
import sqlalchemy as sa
from alembic import command

from symfonic.core.contracts.errors import RevisionConflict
from symfonic.core.contracts.store import (
    NewPause,
    PauseChange,
    ResumePublish,
    Store,
    TurnPublish,
)
from symfonic.core.contracts.types import PauseState
from symfonic.storage import open_store
from test_migrate import _alembic, _migrated, _old_store_with_pauses
from test_store_pauses import (
    HOUR,
    T0,
    TURN,
    checkpoint_of,
    claim_of,
    claimed,
    new_session,
    pause_record,
    paused,
)

pytestmark = pytest.mark.anyio

S = PauseState


@pytest.fixture
async def other(store_url: str, store: Store) -> AsyncIterator[Store]:
    """A second worker's store on the same database."""
    async with open_store(store_url) as opened:
        yield opened


async def changes_after(store: Store, position: int) -> list[tuple[str, PauseState]]:
    replay = await store.pause_changes_since(position, limit=1000)
    assert replay is not None
    return [(c.pause.pause_id, c.state) for c in replay if c.position > position]


async def test_each_transition_leaves_exactly_one_change_in_order(store: Store) -> None:
    start = await store.pause_change_position()
    session_id = await new_session(store)
    answered, claim = await claimed(store, session_id)
    await store.publish_resume(ResumePublish(session_id, claim.claim_id, TURN, "done"))
    expiring = await paused(store, session_id, expires_at=T0 + timedelta(minutes=5))
    await store.sweep(T0 + timedelta(minutes=10))
    dropped, dropped_claim = await claimed(store, session_id)
    await store.abandon_claim(session_id, dropped_claim.claim_id)
    waiting = await paused(store, session_id)
    await store.abandon_pending(session_id)
    first, first_claim = await claimed(store, session_id)
    follow = pause_record(session_id, tool_call_id="call_2")
    await store.record_pause(
        NewPause(follow, checkpoint_of(follow), supersedes=first_claim.claim_id)
    )

    assert await changes_after(store, start) == [
        (answered.pause_id, S.PENDING),
        (answered.pause_id, S.CLAIMED),
        (answered.pause_id, S.PUBLISHED),
        (expiring.pause_id, S.PENDING),
        (expiring.pause_id, S.EXPIRED),
        (dropped.pause_id, S.PENDING),
        (dropped.pause_id, S.CLAIMED),
        (dropped.pause_id, S.ABANDONED),
        (waiting.pause_id, S.PENDING),
        (waiting.pause_id, S.ABANDONED),
        (first.pause_id, S.PENDING),
        (first.pause_id, S.CLAIMED),
        (first.pause_id, S.SUPERSEDED),
        (follow.pause_id, S.PENDING),
    ]
    assert await store.pause_change_position() > start


async def test_writes_that_do_not_change_a_state_leave_no_change(store: Store) -> None:
    session_id = await new_session(store)
    pause, claim = await claimed(store, session_id)
    position = await store.pause_change_position()
    assert await store.renew_claim(session_id, claim.claim_id, T0 + 2 * HOUR)
    assert not await store.claim_pause(claim_of(pause))  # lost: no write
    assert await store.sweep(T0) is not None  # nothing stale
    assert await store.pause_change_position() == position


async def test_a_transition_that_rolls_back_leaves_no_change(store: Store) -> None:
    session_id = await new_session(store)
    first, claim = await claimed(store, session_id)
    position = await store.pause_change_position()
    # The supersede runs, then the insert fails: both roll back, with their changes.
    clash = pause_record(session_id, pause_id=first.pause_id)
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        await store.record_pause(
            NewPause(clash, checkpoint_of(clash), supersedes=claim.claim_id)
        )
    # The pause is marked published, then the history append loses its revision.
    await store.publish_turn(TurnPublish(session_id, 0, TURN, "no-run"))
    with pytest.raises(RevisionConflict):
        await store.publish_resume(ResumePublish(session_id, claim.claim_id, TURN, "late"))
    assert await store.pause_change_position() == position
    assert await changes_after(store, position) == []


async def test_a_watch_sees_what_another_worker_commits_in_order(
    store: Store, other: Store
) -> None:
    seen: list[PauseChange] = []
    async with aclosing(store.watch_pause_changes()) as watch:
        assert await anext(watch) == []  # listening from here on
        session_id = await new_session(other)
        pause, claim = await claimed(other, session_id)
        await other.publish_resume(ResumePublish(session_id, claim.claim_id, TURN, "done"))
        with anyio.fail_after(2):
            async for batch in watch:
                seen.extend(batch)
                if len(seen) >= 3:
                    break
    assert [(c.pause.pause_id, c.state) for c in seen] == [
        (pause.pause_id, S.PENDING),
        (pause.pause_id, S.CLAIMED),
        (pause.pause_id, S.PUBLISHED),
    ]
    assert seen[-1].pause.answered_by == "ann"
    assert [c.position for c in seen] == sorted(c.position for c in seen)


async def test_a_replay_from_a_position_the_store_never_gave_is_refused(store: Store) -> None:
    session_id = await new_session(store)
    await paused(store, session_id)
    position = await store.pause_change_position()
    assert await store.pause_changes_since(position + 5, limit=10) is None
    assert await store.pause_changes_since(-1, limit=10) is None
    for _ in range(3):
        await paused(store, session_id)
    assert await store.pause_changes_since(position, limit=2) is None  # too many to replay
    replay = await store.pause_changes_since(position, limit=10)
    assert replay is not None and len([c for c in replay if c.position > position]) == 3


async def test_a_change_waits_for_an_uncommitted_earlier_one_so_the_feed_is_in_commit_order(
    postgres_url: str,
) -> None:
    """On PostgreSQL every pause change appends to the audit chain, whose head row a
    writer holds until it commits: a second change waits for the first to commit, so
    positions are handed out in commit order and the watch never sees a later one first."""
    import asyncpg

    async with open_store(postgres_url) as store:
        session_id, other_session = await new_session(store), await new_session(store)
        slow, fast = await paused(store, session_id), await paused(store, other_session)
        async with aclosing(store.watch_pause_changes()) as watch:
            assert await anext(watch) == []
            held = await asyncpg.connect(postgres_url)
            try:
                transaction = held.transaction()
                await transaction.start()
                await held.execute(
                    "UPDATE symfonic_pauses SET state = 'abandoned' WHERE pause_id = $1",
                    slow.pause_id,
                )  # holds the chain's head, uncommitted
                async with anyio.create_task_group() as group:
                    done = anyio.Event()

                    async def abandon_the_other() -> None:
                        await store.abandon_pending(other_session)
                        done.set()

                    group.start_soon(abandon_the_other)
                    with anyio.move_on_after(0.5):
                        await done.wait()
                    assert not done.is_set()  # it waits for the held change's commit
                    await transaction.commit()
                    with anyio.fail_after(5):
                        await done.wait()
                with anyio.fail_after(5):
                    changes = await anext(watch)
                    while len(changes) < 2:
                        changes += await anext(watch)
            finally:
                await held.close()
        assert [(c.pause.pause_id, c.state) for c in changes] == [
            (slow.pause_id, S.ABANDONED),
            (fast.pause_id, S.ABANDONED),
        ]
        assert changes[0].position < changes[1].position


async def test_an_upgraded_store_records_the_changes_of_pauses_made_before_it(
    store_url: str,
) -> None:
    def at_0003(connection: sa.Connection) -> None:
        _old_store_with_pauses(connection)
        _alembic(connection, lambda config: command.upgrade(config, "0003"))

    await _migrated(store_url, at_0003)
    async with open_store(store_url) as store:  # migrates to head
        assert await store.pause_change_position() == 0
        assert await store.abandon_pending("s1") == 1
        replay = await store.pause_changes_since(0, limit=10)
        assert replay is not None
        assert [(c.pause.pause_id, c.state) for c in replay] == [("waiting", S.ABANDONED)]

    def downgraded(connection: sa.Connection) -> list[str]:
        _alembic(connection, lambda config: command.downgrade(config, "0003"))
        connection.execute(sa.text("UPDATE symfonic_pauses SET state = 'expired'"))
        return sa.inspect(connection).get_table_names()

    assert "symfonic_pause_events" not in await _migrated(store_url, downgraded)
