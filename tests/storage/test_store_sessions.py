"""The session half of the storage port, on both stores, and what every worker shares.

History is appended only at the revision the turn started from; a first turn
holds its session with a leased run marker; the token secret and the schema are
created once per database however many workers open it at the same moment; and
a database out of reach is one error type, ``StoreUnavailable``.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from symfonic.core.contracts.errors import RevisionConflict, StoreUnavailable
from symfonic.core.contracts.store import RunRequest, SessionRecord, Store, TurnPublish
from symfonic.storage import open_store

pytestmark = pytest.mark.anyio

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


async def new_session(store: Store) -> str:
    session_id = uuid.uuid4().hex
    await store.create_session(
        SessionRecord(session_id, "ann", "assistant", 0, {"team": "a"}, created_at=T0)
    )
    return session_id


def turn(text: str) -> list[dict[str, object]]:
    return [{"role": "human", "content": text}, {"role": "ai", "content": f"re: {text}"}]


async def test_a_session_reads_back_as_created(store: Store) -> None:
    session_id = await new_session(store)
    session = await store.get_session(session_id)
    assert session == SessionRecord(session_id, "ann", "assistant", 0, {"team": "a"}, T0)
    assert await store.get_session("nope") is None


async def test_history_grows_by_revision_and_reads_up_to_one(store: Store) -> None:
    session_id = await new_session(store)
    assert await store.publish_turn(TurnPublish(session_id, 0, turn("one"), "run-1")) == 1
    assert await store.publish_turn(TurnPublish(session_id, 1, turn("two"), "run-2")) == 2
    assert await store.history(session_id, 0) == []
    assert await store.history(session_id, 1) == turn("one")
    assert await store.history(session_id, 2) == turn("one") + turn("two")


async def test_history_reads_back_bodies_that_hold_its_own_separators(store: Store) -> None:
    # The database joins the stored bodies with commas and the store brackets them:
    # text that looks like that framing must come back as it went in.
    tricky = [
        {"role": "human", "content": '],[{"role": "ai"}, "x"],\n'},
        {
            "role": "ai",
            "content": "",
            "tool_calls": [{"id": "c,1", "name": "pay", "args": {"to": "[a, b]", "n": [1, {}]}}],
        },
        {"role": "tool", "content": "ok, ] done ☃", "tool_call_id": "c,1", "name": "pay"},
        {"role": "ai", "content": ","},
    ]
    session_id = await new_session(store)
    assert await store.publish_turn(TurnPublish(session_id, 0, tricky, "run-1")) == 1
    assert await store.history(session_id, 1) == tricky
    now = datetime.now(UTC)
    start = await store.begin_run(
        RunRequest(session_id, "run-2", now=now, lease_until=now + MINUTE)
    )
    assert start is not None and start.history == tricky


async def test_a_stale_publish_conflicts_and_appends_nothing(store: Store) -> None:
    session_id = await new_session(store)
    racers = [turn(f"racer {i}") for i in range(8)]
    won: list[int] = []

    async def publish(i: int) -> None:
        try:
            await store.publish_turn(TurnPublish(session_id, 0, racers[i], f"run-{i}"))
            won.append(i)
        except RevisionConflict:
            pass

    async with anyio.create_task_group() as group:
        for i in range(len(racers)):
            group.start_soon(publish, i)
    assert len(won) == 1
    assert await store.history(session_id, 99) == racers[won[0]]
    session = await store.get_session(session_id)
    assert session is not None and session.revision == 1


async def test_one_run_at_a_time_until_it_ends_or_its_lease_lapses(store: Store) -> None:
    session_id = await new_session(store)
    now = datetime.now(UTC)
    assert await store.begin_run(RunRequest(session_id, "a", now=now, lease_until=now + MINUTE))
    session = await store.get_session(session_id)
    assert session is not None and session.running
    assert not await store.begin_run(RunRequest(session_id, "b", now=now, lease_until=now + MINUTE))
    await store.end_run(session_id, "b")  # not the holder: nothing changes
    assert not await store.begin_run(RunRequest(session_id, "b", now=now, lease_until=now + MINUTE))
    later = now + 2 * MINUTE
    assert await store.begin_run(RunRequest(session_id, "b", now=later, lease_until=later + MINUTE))
    await store.end_run(session_id, "b")
    assert await store.begin_run(RunRequest(session_id, "c", now=now, lease_until=now + MINUTE))
    # Publishing the run's turn ends the run in the same transaction.
    await store.publish_turn(TurnPublish(session_id, 0, turn("c"), "c"))
    session = await store.get_session(session_id)
    assert session is not None and not session.running


async def opened_at_once(url: str, workers: int) -> list[bytes]:
    """Each worker's secret, with every worker opening ``url`` at the same moment."""
    secrets: list[bytes] = []
    failures: list[BaseException] = []

    async def worker() -> None:
        try:
            async with open_store(url) as store:
                secrets.append(await store.signing_secret())
        except Exception as error:  # kept, not raised: the others must run to the end
            failures.append(error)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for _ in range(workers):
                group.start_soon(worker)
    assert failures == []
    return secrets


async def test_every_worker_opening_a_fresh_database_at_once_shares_one_secret(
    store_url: str, tmp_path: Path
) -> None:
    # A fresh SQLite file is cheap, so try the first-open race on several.
    fresh = [f"sqlite:///{tmp_path / f'fresh-{i}.db'}" for i in range(10)]
    for url in [store_url] if store_url.startswith("postgres") else [store_url, *fresh]:
        secrets = await opened_at_once(url, 6)
        assert len(secrets) == 6 and len(set(secrets)) == 1
        assert len(secrets[0]) >= 16
        async with open_store(url) as reopened:
            assert await reopened.signing_secret() == secrets[0]


@contextmanager
def holding_the_write_lock(sqlite_url: str) -> Iterator[sqlite3.Connection]:
    """Another connection to the file holding its write lock, as a worker mid-publish does."""
    writer = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        yield writer
    finally:
        if writer.in_transaction:
            writer.execute("ROLLBACK")
        writer.close()


async def test_sqlite_reads_go_on_while_another_process_holds_the_write_lock(
    sqlite_url: str,
) -> None:
    async with open_store(sqlite_url) as store:
        session_id = await new_session(store)
        with holding_the_write_lock(sqlite_url) as writer:
            released = anyio.Event()

            async def release_later() -> None:
                await anyio.sleep(2)  # a slow writer; a read that waits for it is wrong
                writer.execute("ROLLBACK")
                released.set()

            async with anyio.create_task_group() as group:
                group.start_soon(release_later)
                assert await store.get_session(session_id) is not None
                assert await store.history(session_id, 0) == []
                assert not released.is_set(), "the reads waited for the writer"
                group.cancel_scope.cancel()


async def test_sqlite_writes_wait_off_the_loop_while_another_process_holds_the_lock(
    sqlite_url: str,
) -> None:
    async with open_store(sqlite_url) as store:
        session_id = await new_session(store)
        ticks = 0
        done: list[str] = []
        both_done = anyio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await anyio.sleep(0.01)
                ticks += 1

        async def publish() -> None:
            await store.publish_turn(TurnPublish(session_id, 0, turn("a"), "run-a"))
            done.append("publish")
            if len(done) == 2:
                both_done.set()

        async def create() -> None:
            done.append(await new_session(store))
            if len(done) == 2:
                both_done.set()

        # Another process, mid-publish.
        with holding_the_write_lock(sqlite_url) as writer, anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                group.start_soon(ticker)
                group.start_soon(publish)
                await anyio.sleep(0.5)
                # The write waits for the lock, and the loop goes on meanwhile.
                assert done == [] and ticks > 10
                group.start_soon(create)  # queues behind the waiting writer
                await anyio.sleep(0.2)
                assert done == []
                writer.execute("ROLLBACK")
                await both_done.wait()
                group.cancel_scope.cancel()
        assert done[0] == "publish"
        assert await store.get_session(done[1]) is not None
        assert await store.history(session_id, 1) == turn("a")
        # With the lock free again, writes run on the loop.
        assert await store.publish_turn(TurnPublish(session_id, 1, turn("b"), "run-b")) == 2


async def test_an_unreachable_sqlite_file_is_store_unavailable(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "s.db"
    with pytest.raises(StoreUnavailable):
        async with open_store(f"sqlite:///{missing}"):
            pass


async def test_an_unreachable_postgres_server_is_store_unavailable() -> None:
    with pytest.raises(StoreUnavailable):
        async with open_store("postgresql://postgres@127.0.0.1:1/none"):
            pass
