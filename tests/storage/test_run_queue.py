"""A session's queue of messages, on both stores: taken in order, once each, or cancelled.

Several workers asking at once for a session's next message take it once
between them, and only ever the head; a session held by a turn, or waiting on a
pause its head refuses, gives nothing; a cancelled message leaves the queue and
its run reads ``cancelled``; a queue a stopping worker hands over reads as lapsed, and a
first turn it hands back goes to its queue's head, its ``turn.started`` kept once.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta

import anyio
import pytest

from symfonic.core.contracts.run_events import NewRun, RunState
from symfonic.core.contracts.store import (
    QueuedTurn,
    RunRequest,
    SessionRecord,
    Store,
    TakenTurn,
)
from symfonic.core.contracts.types import TextDeltaEvent, TurnStartedEvent
from symfonic.storage import open_store

pytestmark = pytest.mark.anyio

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=1)
WORKERS = 4


@pytest.fixture
async def workers(store_url: str, store: Store) -> AsyncIterator[list[Store]]:
    """Other workers' stores on the same database."""
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(open_store(store_url)) for _ in range(WORKERS)]


async def session(store: Store) -> str:
    session_id = uuid.uuid4().hex
    await store.create_session(SessionRecord(session_id, "ann", "a", 0, {}, T0))
    return session_id


def asked(session_id: str, message: str, run_id: str) -> QueuedTurn:
    return QueuedTurn(
        run_id=run_id,
        session_id=session_id,
        owner="ann",
        principal="ann",
        scopes=frozenset({"payments"}),
        message=message,
        on_pending_pause="reject",
        queued_at=T0,
    )


async def queued(store: Store, session_id: str, message: str) -> str:
    run_id = uuid.uuid4().hex
    await store.enqueue_turn(asked(session_id, message, run_id))
    return run_id


async def take(store: Store, session_id: str, at: datetime = T0) -> TakenTurn | None:
    return await store.take_queued_turn(session_id, at, at + LEASE)


async def test_workers_asking_at_once_take_each_message_once_in_order(
    store: Store, workers: list[Store]
) -> None:
    session_id = await session(store)
    run_ids = [await queued(store, session_id, f"m{n}") for n in range(3)]
    record = await store.run_record(run_ids[0])
    assert record is not None and record.state is RunState.QUEUED
    taken_in_order: list[TakenTurn] = []

    async def ask(worker: Store, won: list[TakenTurn]) -> None:
        taken = await take(worker, session_id)
        if taken is not None:
            won.append(taken)

    for n in range(3):
        won: list[TakenTurn] = []
        async with anyio.create_task_group() as tasks:
            for worker in workers:
                tasks.start_soon(ask, worker, won)
        assert len(won) == 1, f"message {n} taken {len(won)} times"
        taken_in_order += won
        # The session is held by the run taken: nobody takes the next meanwhile.
        assert await take(store, session_id) is None
        await store.end_run(session_id, won[0].turn.run_id)
    assert [t.turn.message for t in taken_in_order] == ["m0", "m1", "m2"]
    assert [t.turn.run_id for t in taken_in_order] == run_ids
    first = taken_in_order[0]
    assert (first.turn.principal, first.turn.scopes) == ("ann", frozenset({"payments"}))
    assert first.start.session.running
    record = await store.run_record(run_ids[0])
    assert record is not None and record.state is RunState.RUNNING
    assert await take(store, session_id) is None  # the queue is empty


async def test_a_held_session_gives_nothing_until_its_marker_lapses(store: Store) -> None:
    session_id = await session(store)
    request = RunRequest(session_id, "turn-1", now=T0, lease_until=T0 + LEASE)
    assert await store.begin_run(request) is not None
    run_id = await queued(store, session_id, "later")
    assert await take(store, session_id) is None
    assert await store.free_queue_heads(T0, 10) == []
    lapsed = T0 + 2 * LEASE
    (head,) = await store.free_queue_heads(lapsed, 10)
    assert (head.session_id, head.run_id, head.lapsed) == (session_id, run_id, True)
    taken = await take(store, session_id, lapsed)
    assert taken is not None and taken.turn.run_id == run_id


async def test_a_cancelled_message_leaves_the_queue(store: Store) -> None:
    session_id = await session(store)
    request = RunRequest(session_id, "turn-1", now=T0, lease_until=T0 + LEASE)
    assert await store.begin_run(request) is not None
    first, second = [await queued(store, session_id, m) for m in ("one", "two")]
    assert await store.cancel_queued_turn(first, T0)
    assert not await store.cancel_queued_turn(first, T0)
    record = await store.run_record(first)
    assert record is not None and record.state is RunState.CANCELLED
    events = await store.run_events_after(first, 0, limit=10)
    assert [e.event.type for e in events] == ["error"]
    await store.end_run(session_id, "turn-1")
    (head,) = await store.free_queue_heads(T0, 10)
    assert (head.run_id, head.lapsed) == (second, False)
    taken = await take(store, session_id)
    assert taken is not None and taken.turn.message == "two"
    assert not await store.cancel_queued_turn(second, T0)  # taken: too late


async def test_a_free_queue_handed_over_reads_lapsed_and_a_held_one_is_left_be(
    store: Store,
) -> None:
    free, held = await session(store), await session(store)
    request = RunRequest(held, "turn-1", now=T0, lease_until=T0 + LEASE)
    assert await store.begin_run(request) is not None
    run_id = await queued(store, free, "next")
    await queued(store, held, "after the turn")
    (head,) = await store.free_queue_heads(T0, 10)
    assert (head.session_id, head.lapsed) == (free, False)  # the ending worker's, first
    nothing = await session(store)
    assert await store.hand_over_queues([free, held, nothing], T0) == 1
    later = T0 + timedelta(seconds=1)
    (head,) = await store.free_queue_heads(later, 10)
    assert (head.session_id, head.run_id, head.lapsed) == (free, run_id, True)
    taken = await take(store, free, later)
    assert taken is not None and taken.turn.run_id == run_id
    assert await take(store, held, later) is None  # still its turn's


async def running(store: Store, session_id: str) -> str:
    """A first turn's run, holding its session, with its ``turn.started`` kept."""
    run_id = uuid.uuid4().hex
    assert await store.begin_run(RunRequest(session_id, run_id, T0, T0 + LEASE)) is not None
    first = TurnStartedEvent(
        session_id=session_id, run_id=run_id, agent="a", base_revision=0, resumed=False
    )
    await store.begin_run_log(NewRun(run_id, session_id, "ann", T0, T0 + LEASE), first)
    return run_id


async def test_a_first_turn_handed_back_runs_next_and_keeps_one_turn_started(
    store: Store,
) -> None:
    session_id = await session(store)
    run_id = await running(store, session_id)
    later = await queued(store, session_id, "later")
    await store.end_run(session_id, run_id)  # the stopped turn let its session go
    assert await store.requeue_turn(asked(session_id, "first", run_id), T0)
    record = await store.run_record(run_id)
    assert record is not None and record.state is RunState.QUEUED
    assert not await store.requeue_turn(asked(session_id, "first", run_id), T0)  # not running
    (head,) = await store.free_queue_heads(T0 + timedelta(seconds=1), 10)
    assert (head.run_id, head.lapsed) == (run_id, True)  # taken by the next sweep at once
    taken = await take(store, session_id, T0 + timedelta(seconds=1))
    assert taken is not None and (taken.turn.run_id, taken.turn.message) == (run_id, "first")
    assert taken.turn.scopes == frozenset({"payments"}) and taken.kept == 1
    assert await take(store, session_id, T0 + timedelta(seconds=1)) is None  # held by it
    (after,) = await store.free_queue_heads(T0 + 2 * LEASE, 10)
    assert after.run_id == later


async def test_a_handed_back_run_cancelled_in_its_queue_keeps_its_events_in_order(
    store: Store,
) -> None:
    session_id = await session(store)
    run_id = await running(store, session_id)
    assert await store.requeue_turn(asked(session_id, "first", run_id), T0)
    assert await store.cancel_queued_turn(run_id, T0)
    events = await store.run_events_after(run_id, 0, limit=10)
    assert [(e.position, e.event.type) for e in events] == [(1, "turn.started"), (2, "error")]


async def test_a_run_that_answered_or_ended_is_not_handed_back(store: Store) -> None:
    session_id = await session(store)
    answered = await running(store, session_id)
    await store.append_run_events(answered, [TextDeltaEvent(text="hello")])
    assert not await store.requeue_turn(asked(session_id, "m", answered), T0)
    await store.end_run_log(answered, RunState.COMPLETE, None, T0)
    assert not await store.requeue_turn(asked(session_id, "m", answered), T0)
    record = await store.run_record(answered)
    assert record is not None and record.state is RunState.COMPLETE
    assert await store.free_queue_heads(T0 + 2 * LEASE, 10) == []  # nothing was queued
