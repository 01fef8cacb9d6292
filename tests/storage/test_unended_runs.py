"""A run marker its turn could not clear while the store was away is cleared by the next sweep.

The outage stands in front of the store's own transactions, as the adapters
report one (``StoreUnavailable``), so the marker's clear fails after its retries
exactly as it does when the server is down; the outage with a real server
stopped is tests/storage/test_run_markers_outage.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from http_support import Clock
from outage_support import DRIVER
from symfonic import SymfonicAgent
from symfonic.core.contracts.errors import ConfigurationError, SessionBusy, StoreUnavailable
from symfonic.core.contracts.store import RunRequest, SessionRecord, Store
from symfonic.core.contracts.webhooks import DeliveryQuery, FailedTurn, WebhookEventType
from symfonic.storage import owed_cleanups, transactions
from symfonic.testing import ScriptedChatModel

pytestmark = pytest.mark.anyio

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=10)
STEPS = ("transaction", "write_rows", "write_count", "read_rows")


@pytest.fixture(autouse=True)
def quick_cleanups(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cleanup gives up after a few milliseconds instead of five seconds."""
    monkeypatch.setattr(transactions, "CLEANUP_RETRY_DELAYS", (0.01,))
    monkeypatch.setattr(transactions, "CLEANUP_SECONDS", 0.05)


@contextmanager
def away(store: Any, *, committed: bool = False) -> Iterator[None]:
    """Every transaction of ``store`` finds it out of reach (``committed``: after
    it took effect, as when a commit's reply is lost with the connection)."""
    real = {name: getattr(store, name) for name in STEPS}

    def failing(step: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def unreachable(*args: Any, **kwargs: Any) -> Any:
            if committed:
                await step(*args, **kwargs)
            raise StoreUnavailable(f"the store could not complete a write: {DRIVER}")

        return unreachable

    for name, step in real.items():
        setattr(store, name, failing(step))
    try:
        yield
    finally:
        for name in STEPS:
            delattr(store, name)


async def new_session(store: Store) -> str:
    session_id = uuid.uuid4().hex
    await store.create_session(SessionRecord(session_id, "ann", "assistant", 0, {}, created_at=T0))
    return session_id


def run(session_id: str, run_id: str) -> RunRequest:
    now = datetime.now(UTC)
    return RunRequest(session_id, run_id, now=now, lease_until=now + LEASE)


async def test_a_marker_whose_clear_met_an_outage_is_cleared_by_the_next_sweep(
    store: Store,
) -> None:
    await store.register_webhook("http://127.0.0.1:9/hook", [WebhookEventType.TURN_FAILED])
    session_id = await new_session(store)
    assert await store.begin_run(run(session_id, "a"))
    failure = FailedTurn("a", session_id, "assistant", "internal", "the store was away", T0)
    with away(store):
        with pytest.raises(StoreUnavailable):
            await store.end_run(session_id, "a", failure)
        with pytest.raises(StoreUnavailable):
            await store.sweep(datetime.now(UTC))  # still away: the sweep fails, and keeps it
    # The store is back, but the turn is long over: only the sweep knows to clear it.
    assert await store.begin_run(run(session_id, "b")) is None
    report = await store.sweep(datetime.now(UTC))
    assert report.runs_ended == 1
    assert await store.begin_run(run(session_id, "c"))
    assert (await store.sweep(datetime.now(UTC))).runs_ended == 0
    (owed,) = await store.list_deliveries(DeliveryQuery(limit=10))
    assert owed.message_id == "msg_turn_failed_a"


async def test_a_marking_whose_reply_was_lost_is_cleared_by_the_next_sweep(store: Store) -> None:
    session_id = await new_session(store)
    with away(store, committed=True), pytest.raises(StoreUnavailable):
        await store.begin_run(run(session_id, "a"))
    session = await store.get_session(session_id)
    assert session is not None and session.running
    assert (await store.sweep(datetime.now(UTC))).runs_ended == 1
    assert await store.begin_run(run(session_id, "b"))


async def test_the_sweep_leaves_a_running_turns_marker_alone(store: Store) -> None:
    session_id = await new_session(store)
    assert await store.begin_run(run(session_id, "a"))
    other = await new_session(store)
    with away(store), pytest.raises(StoreUnavailable):
        await store.end_run(other, "gone")
    assert (await store.sweep(datetime.now(UTC))).runs_ended == 0
    assert await store.begin_run(run(session_id, "b")) is None


class Flaky:
    """A model whose first call fails (so the turn ends unpublished), then answers."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, messages: list[BaseMessage]) -> str:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("the model broke")
        return "fine"


async def test_a_turns_marker_lasts_the_agents_run_lease(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigurationError, match="run_lease"):
        SymfonicAgent(model=ScriptedChatModel(respond=Flaky()), store=sqlite_url, run_lease=0)
    clock = Clock()
    model = ScriptedChatModel(respond=Flaky())
    async with SymfonicAgent(model=model, store=sqlite_url, clock=clock, run_lease=30) as agent:
        session_id = await agent.create_session()
        # The turn fails and its marker cannot be cleared; no sweep runs.
        with monkeypatch.context() as patched:
            patched.setattr(agent.store, "end_run", failing_end_run)
            failed = await agent.run("hello", session_id)
        assert failed.status == "failed"
        clock.advance(29)
        with pytest.raises(SessionBusy):
            await agent.run("hello again", session_id)
        clock.advance(2)
        assert (await agent.run("hello again", session_id)).status == "complete"


async def failing_end_run(*_: Any, **__: Any) -> None:
    raise StoreUnavailable(f"the store could not complete a write: {DRIVER}")


async def test_the_record_is_bounded_and_the_rest_left_to_their_lease(
    store: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(owed_cleanups, "MOST_OWED", 2)
    sessions = [await new_session(store) for _ in range(3)]
    for session_id in sessions:
        assert await store.begin_run(run(session_id, "a"))
    with away(store):
        for session_id in sessions:
            with pytest.raises(StoreUnavailable):
                await store.end_run(session_id, "a")
    assert (await store.sweep(datetime.now(UTC))).runs_ended == 2
    assert "left to its run lease" in caplog.text
    # The oldest, whose lease ends first, is the one left to it.
    assert await store.begin_run(run(sessions[0], "b")) is None
    assert await store.begin_run(run(sessions[2], "b"))
