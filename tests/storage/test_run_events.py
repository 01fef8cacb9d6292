"""The kept events of runs, on both stores: what a client rejoining a run reads.

A run's events come back in order, numbered from 1; text deltas of one append
are one row; a run keeps at most RUN_EVENT_LIMIT rows and always its terminal
event; another worker's watch learns of each append; a run whose worker
stopped renewing it reads as failed; and retention deletes a run and its events
once it has ended for longer than the TTL, never a run still running.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing
from datetime import UTC, datetime, timedelta

import anyio
import pytest

from symfonic.agent.retention import RUN_EVENTS_TTL, prune_run_events
from symfonic.core.contracts.errors import RevisionConflict
from symfonic.core.contracts.run_events import CANCELLED, RUN_EVENT_LIMIT, NewRun, RunState
from symfonic.core.contracts.store import RunRequest, SessionRecord, Store, TurnPublish
from symfonic.core.contracts.types import (
    Event,
    ResponseCompleteEvent,
    TextDeltaEvent,
    ToolCallEvent,
    TurnStartedEvent,
)
from symfonic.storage import open_store
from symfonic.storage.statements import Dialect, Statement

pytestmark = pytest.mark.anyio

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
SQLITE_SYNC = Statement("PRAGMA synchronous")
POSTGRES_SYNC = Statement("SELECT current_setting('synchronous_commit') AS synchronous")


@pytest.fixture
async def other(store_url: str, store: Store) -> AsyncIterator[Store]:
    """A second worker's store on the same database."""
    async with open_store(store_url) as opened:
        yield opened


async def begun(store: Store, *, at: datetime = T0, lease: timedelta = MINUTE) -> str:
    run_id = uuid.uuid4().hex
    await store.begin_run_log(
        NewRun(run_id, "session-1", "ann", created_at=at, lease_until=at + lease)
    )
    return run_id


def started(run_id: str) -> TurnStartedEvent:
    return TurnStartedEvent(
        session_id="session-1", run_id=run_id, agent="a", base_revision=0, resumed=False
    )


def call(n: int) -> ToolCallEvent:
    return ToolCallEvent(tool_call_id=f"c{n}", name="lookup", args={"n": n})


async def kept(store: Store, run_id: str, after: int = 0) -> list[tuple[int, Event]]:
    events = await store.run_events_after(run_id, after, limit=10_000)
    return [(e.position, e.event) for e in events]


async def test_events_come_back_in_order_numbered_from_one_with_deltas_merged(
    store: Store,
) -> None:
    run_id = await begun(store)
    assert await store.append_run_events(run_id, [started(run_id)]) == 1
    deltas = [TextDeltaEvent(text=f"w{n} ") for n in range(2000)]
    assert await store.append_run_events(run_id, deltas) == 1
    done = ResponseCompleteEvent(answer="".join(d.text for d in deltas), revision=1)
    assert await store.append_run_events(run_id, [call(1), done]) == 2
    assert await store.end_run_log(run_id, RunState.COMPLETE, {"answer": "hi"}, T0)

    events = await kept(store, run_id)
    assert [position for position, _ in events] == [1, 2, 3, 4]
    assert events[0][1] == started(run_id)
    assert events[1][1] == TextDeltaEvent(text=done.answer)
    assert events[3][1] == done
    assert await kept(store, run_id, after=2) == events[2:]
    record = await store.run_record(run_id)
    assert record is not None
    assert (record.state, record.outcome, record.events, record.dropped) == (
        RunState.COMPLETE,
        {"answer": "hi"},
        4,
        0,
    )


async def test_a_run_keeps_at_most_its_bound_and_always_its_terminal_event(store: Store) -> None:
    run_id = await begun(store)
    await store.append_run_events(run_id, [call(n) for n in range(RUN_EVENT_LIMIT + 10)])
    done = ResponseCompleteEvent(answer="done")
    assert await store.append_run_events(run_id, [done]) == 1
    events = await kept(store, run_id)
    assert len(events) == RUN_EVENT_LIMIT
    assert events[-2][1] == call(RUN_EVENT_LIMIT - 2)
    assert events[-1] == (RUN_EVENT_LIMIT, done)
    record = await store.run_record(run_id)
    assert record is not None and record.dropped == 11


async def test_a_runs_final_event_is_kept_with_its_end_and_only_while_running(
    store: Store,
) -> None:
    run_id = await begun(store)
    await store.append_run_events(run_id, [started(run_id)])
    done = ResponseCompleteEvent(answer="hi", revision=1)
    assert await store.end_run_log(run_id, RunState.COMPLETE, {"answer": "hi"}, T0, [done])
    assert await kept(store, run_id) == [(1, started(run_id)), (2, done)]
    record = await store.run_record(run_id)
    assert record is not None and (record.state, record.events) == (RunState.COMPLETE, 2)
    # An ended run keeps no second final event.
    assert not await store.end_run_log(run_id, RunState.FAILED, None, T0, [call(1)])
    assert len(await kept(store, run_id)) == 2


async def test_an_ended_run_takes_no_more_events_and_ends_once(store: Store) -> None:
    run_id = await begun(store)
    assert await store.end_run_log(run_id, RunState.CANCELLED, None, T0)
    assert not await store.end_run_log(run_id, RunState.COMPLETE, None, T0)
    assert await store.append_run_events(run_id, [call(1)]) == 0
    assert not await store.renew_run_log(run_id, T0 + MINUTE)
    record = await store.run_record(run_id)
    assert record is not None and record.state is RunState.CANCELLED
    assert await kept(store, run_id) == []
    assert await store.run_record("no-such-run") is None


async def test_a_run_whose_worker_stopped_renewing_reads_as_failed(store: Store) -> None:
    run_id = await begun(store)
    record = await store.run_record(run_id)
    assert record is not None
    assert record.state_at(T0 + MINUTE / 2) is RunState.RUNNING
    assert record.state_at(T0 + 2 * MINUTE) is RunState.FAILED
    assert await store.renew_run_log(run_id, T0 + 5 * MINUTE)
    renewed = await store.run_record(run_id)
    assert renewed is not None and renewed.state_at(T0 + 2 * MINUTE) is RunState.RUNNING


async def test_a_watch_learns_of_the_events_another_worker_appends(
    store: Store, other: Store
) -> None:
    quiet, busy = await begun(other), await begun(other)
    seen: set[str] = set()
    async with aclosing(store.watch_run_events()) as watch:
        assert await anext(watch) == []  # listening from here on
        await other.append_run_events(busy, [started(busy)])
        with anyio.fail_after(5):
            async for batch in watch:
                seen.update(batch)
                if busy in seen:
                    break
    assert quiet not in seen


async def test_a_watch_learns_of_the_events_its_own_worker_appends(store: Store) -> None:
    """As a cancel sent to this worker, for a run another one runs, is heard by its followers."""
    run_id = await begun(store)
    async with aclosing(store.watch_run_events()) as watch:
        assert await anext(watch) == []
        await store.append_run_events(run_id, [call(1)])
        with anyio.fail_after(5):
            assert run_id in await anext(watch)


async def test_a_run_begun_with_its_first_event_numbers_the_next_after_it(store: Store) -> None:
    run_id = uuid.uuid4().hex
    await store.begin_run_log(NewRun(run_id, "session-1", "ann", T0, T0 + MINUTE), started(run_id))
    assert await store.append_run_events(run_id, [call(1)]) == 1
    assert await kept(store, run_id) == [(1, started(run_id)), (2, call(1))]


async def test_the_turns_own_commits_still_wait_for_the_disk_after_a_runs_writes(
    store: Store,
) -> None:
    """A run's rows are written without waiting for the disk; nothing else may be."""
    run_id = await begun(store)
    await store.append_run_events(run_id, [started(run_id)])
    await store.end_run_log(run_id, RunState.COMPLETE, None, T0, [ResponseCompleteEvent(answer="")])
    sql = store.dialect is Dialect.SQLITE  # type: ignore[attr-defined]
    setting = SQLITE_SYNC if sql else POSTGRES_SYNC
    rows = await store.read_rows(setting, {}, "setting")  # type: ignore[attr-defined]
    assert rows[0]["synchronous"] == (2 if sql else "on")  # FULL; PostgreSQL's default


async def test_retention_deletes_runs_ended_before_the_ttl_and_keeps_the_rest(
    store: Store,
) -> None:
    now = T0 + 3 * RUN_EVENTS_TTL
    old = await begun(store)
    await store.append_run_events(old, [started(old), ResponseCompleteEvent(answer="a")])
    await store.end_run_log(old, RunState.COMPLETE, None, now - RUN_EVENTS_TTL - MINUTE)
    recent = await begun(store)
    await store.append_run_events(recent, [started(recent)])
    await store.end_run_log(recent, RunState.FAILED, None, now - RUN_EVENTS_TTL + MINUTE)
    lost = await begun(store)  # its worker died: the lease lapsed long ago
    running = await begun(store, at=now - MINUTE)
    await store.append_run_events(running, [started(running)])

    assert await prune_run_events(store, RUN_EVENTS_TTL, now, batch=1) == 2

    assert await store.run_record(old) is None and await kept(store, old) == []
    assert await store.run_record(lost) is None
    assert len(await kept(store, recent)) == 1
    assert len(await kept(store, running)) == 1


async def marked_run(store: Store) -> tuple[str, str]:
    """A session whose first turn holds its run marker, and that run's row."""
    session_id, run_id = uuid.uuid4().hex, uuid.uuid4().hex
    await store.create_session(SessionRecord(session_id, "ann", "a", 0, {}, created_at=T0))
    assert await store.begin_run(RunRequest(session_id, run_id, T0, T0 + MINUTE)) is not None
    await store.begin_run_log(NewRun(run_id, session_id, "ann", T0, T0 + MINUTE))
    await store.append_run_events(run_id, [started(run_id)])
    return session_id, run_id


ANSWER = [{"role": "human", "content": "hi"}, {"role": "ai", "content": "hello"}]


async def test_a_cancel_takes_the_run_marker_so_its_turn_publishes_nothing(store: Store) -> None:
    session_id, run_id = await marked_run(store)
    # The marker is left lapsed from the cancel on (a session reads its lease on the wall clock).
    assert await store.cancel_run(run_id, datetime.now(UTC))
    with pytest.raises(RevisionConflict):
        await store.publish_turn(TurnPublish(session_id, 0, ANSWER, run_id))
    session = await store.get_session(session_id)
    assert session is not None and (session.revision, session.running) == (0, False)
    record = await store.run_record(run_id)
    assert record is not None and record.state is RunState.CANCELLED
    assert (await kept(store, run_id))[-1] == (2, CANCELLED)
    assert not await store.cancel_run(run_id, T0)


async def test_a_cancel_after_the_turn_settled_changes_nothing(store: Store) -> None:
    session_id, run_id = await marked_run(store)
    await store.publish_turn(TurnPublish(session_id, 0, ANSWER, run_id))
    assert not await store.cancel_run(run_id, T0)
    record = await store.run_record(run_id)
    assert record is not None and (record.state, record.events) == (RunState.RUNNING, 1)
    assert len(await kept(store, run_id)) == 1


async def test_the_run_in_progress_is_the_one_whose_turn_holds_the_session(
    store: Store,
) -> None:
    session_id, run_id = await marked_run(store)
    found = await store.running_run(session_id, T0)
    assert found is not None and found.run_id == run_id
    assert await store.running_run(uuid.uuid4().hex, T0) is None
    assert await store.running_run(session_id, T0 + 2 * MINUTE) is None  # its lease lapsed
    # Settled (published) while its row still says running: no longer in progress,
    # so the session's next message starts a turn of its own.
    await store.publish_turn(TurnPublish(session_id, 0, ANSWER, run_id))
    record = await store.run_record(run_id)
    assert record is not None and record.state is RunState.RUNNING
    assert await store.running_run(session_id, T0) is None
    # A run that is not the marker's (its events kept, its turn long gone) is not either.
    assert await store.begin_run(RunRequest(session_id, uuid.uuid4().hex, T0, T0 + MINUTE))
    assert await store.running_run(session_id, T0) is None
