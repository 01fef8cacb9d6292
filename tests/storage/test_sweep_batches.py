"""A backlog is worked off in short batches: the sweep's, and the watch's of changes.

A sweep that finds more pauses due than one batch holds moves them in several
transactions, each of at most ``SWEEP_BATCH`` pauses, and still moves every one
of them in the one pass. A watch that finds a burst of changes hands them on in
batches of at most ``WATCH_BATCH``, in order, none missed. Both run on the two
stores; the batch sizes are made small here so a few rows make a backlog.
"""

from __future__ import annotations

from contextlib import aclosing
from datetime import timedelta
from typing import Any

import anyio
import pytest

from symfonic.core.contracts.store import PauseChange, Store
from symfonic.core.contracts.types import PauseState
from symfonic.storage import pause_changes, pause_sweep
from symfonic.storage.sql_store import SqlStore
from symfonic.storage.statements import Dialect
from test_store_pauses import T0, new_session, paused, state_of

pytestmark = pytest.mark.anyio


def _count_background(store: SqlStore) -> list[int]:
    """How many background transactions the store runs from now on (one entry each)."""
    runs: list[int] = []
    background = store.background_transaction

    async def counted(body: Any, operation: str) -> Any:
        runs.append(1)
        return await background(body, operation)

    store.background_transaction = counted  # type: ignore[method-assign]
    return runs


async def test_a_sweep_moves_a_backlog_in_transactions_of_one_batch_each(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pause_sweep, "SWEEP_BATCH", 3)
    assert isinstance(store, SqlStore)
    session_id = await new_session(store)
    due = [await paused(store, session_id, expires_at=T0 + timedelta(minutes=1)) for _ in range(7)]
    waiting = await paused(store, session_id, expires_at=T0 + timedelta(hours=2))
    runs = _count_background(store)
    report = await store.sweep(T0 + timedelta(minutes=5))
    assert report.expired == 7
    # 3 + 3 + 1 expired, then one pass over the (no) lapsed claims.
    assert len(runs) == 4
    for pause in due:
        assert await state_of(store, pause.pause_id) is PauseState.EXPIRED
    assert await state_of(store, waiting.pause_id) is PauseState.PENDING


async def test_a_watch_hands_a_burst_on_in_batches_in_order(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pause_changes, "WATCH_BATCH", 4)
    # Long enough for the ten pauses below to land between two polls.
    monkeypatch.setattr(type(store), "POLL_SECONDS", 0.5)
    assert isinstance(store, SqlStore)
    session_id = await new_session(store)
    batches: list[list[PauseChange]] = []
    async with aclosing(store.watch_pause_changes()) as watch:
        assert await anext(watch) == []
        made = [await paused(store, session_id) for _ in range(10)]
        with anyio.fail_after(5):
            async for batch in watch:
                batches.append(batch)
                if sum(len(b) for b in batches) >= 10:
                    break
    seen = [change.pause.pause_id for batch in batches for change in batch]
    assert seen == [pause.pause_id for pause in made]
    if store.dialect is Dialect.SQLITE:  # PostgreSQL's watch reads what it is notified of
        assert max(len(batch) for batch in batches) <= 4
