"""Two takeovers of one busy session, each from its own worker's store.

A takeover cancels the turn its caller saw holding the session. When two callers saw the
same turn and ask at once, one takes the session and the other is refused, cancelling
nothing: two interrupts never start two turns one after the other. A takeover asked after
another's new turn began is a second interrupt, and cancels that turn as it should.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import anyio
import pytest

from symfonic.core.contracts.interrupts import Interrupted
from symfonic.core.contracts.store import RunRequest, SessionRecord, Store
from symfonic.storage import open_store

pytestmark = pytest.mark.anyio

MINUTE = timedelta(minutes=1)


def request(session_id: str, run_id: str, seen_holder: str | None = None) -> RunRequest:
    now = datetime.now(UTC)
    return RunRequest(
        session_id, run_id, now=now, lease_until=now + MINUTE, seen_holder=seen_holder
    )


async def busy_session(store: Store) -> str:
    session_id = uuid.uuid4().hex
    await store.create_session(
        SessionRecord(session_id, "ann", "assistant", 0, {}, datetime.now(UTC))
    )
    assert await store.begin_run(request(session_id, "holder"))
    return session_id


async def seen_holder(store: Store, session_id: str) -> str | None:
    session = await store.get_session(session_id)
    assert session is not None
    return session.run_id


async def take(store: Store, asked: RunRequest, taken: dict[str, Interrupted | None]) -> None:
    taken[asked.run_id] = await store.interrupt_turn(asked, forget=False)


async def test_two_takeovers_of_the_turn_both_saw_leave_one_new_turn(store_url: str) -> None:
    async with open_store(store_url) as first, open_store(store_url) as second:
        for _ in range(5):
            session_id = await busy_session(first)
            seen = {
                "a": await seen_holder(first, session_id),
                "b": await seen_holder(second, session_id),
            }
            assert seen == {"a": "holder", "b": "holder"}
            taken: dict[str, Interrupted | None] = {}
            async with anyio.create_task_group() as group:
                for store, run_id in ((first, "a"), (second, "b")):
                    group.start_soon(take, store, request(session_id, run_id, seen[run_id]), taken)

            won = [interrupted for interrupted in taken.values() if interrupted is not None]
            assert len(won) == 1, taken
            assert won[0].cancelled_run == "holder"
            # The winner holds the session: a third turn finds it busy.
            assert not await first.begin_run(request(session_id, "third"))


async def test_a_takeover_asked_after_another_began_cancels_that_new_turn(store_url: str) -> None:
    async with open_store(store_url) as store:
        session_id = await busy_session(store)
        first = await store.interrupt_turn(request(session_id, "a", "holder"), forget=False)
        assert first is not None and first.cancelled_run == "holder"
        second = await store.interrupt_turn(
            request(session_id, "b", await seen_holder(store, session_id)), forget=False
        )
        assert second is not None and second.cancelled_run == "a"
