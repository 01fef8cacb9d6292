"""The outbox per destination: unique ids, leases per URL, shared circuits, pruning."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import anyio
import pytest

from conftest import drop_postgres_database, fresh_postgres_database
from symfonic.core.contracts.readdressing import Reassignment
from symfonic.core.contracts.store import Store
from symfonic.core.contracts.webhooks import (
    CircuitState,
    DeliveryLease,
    DeliveryQuery,
    DeliverySettlement,
    DeliveryState,
    WebhookEventType,
)
from symfonic.storage import open_store
from test_store_pauses import HOUR, T0, new_session, paused

pytestmark = pytest.mark.anyio

URL = "http://127.0.0.1:9/hook"
OTHER = "http://127.0.0.1:10/hook"
CREATED = [WebhookEventType.PAUSE_CREATED]


@pytest.fixture
def another_url(store_url: str, tmp_path: Path) -> Iterator[str]:
    """A second, fresh database of the same kind: a store reset, or another deployment."""
    if store_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'another.db'}"
        return
    url, name = fresh_postgres_database()
    try:
        yield url
    finally:
        drop_postgres_database(name)


@pytest.fixture
async def other(store_url: str, store: Store) -> AsyncIterator[Store]:
    """A second worker's store on the same database (its own pool)."""
    async with open_store(store_url) as opened:
        yield opened


async def _first_message_id(store: Store) -> str:
    await store.register_webhook(URL, CREATED)
    await paused(store, await new_session(store))
    (delivery,) = await store.list_deliveries(DeliveryQuery())
    return delivery.message_id


async def test_a_fresh_database_never_hands_out_an_id_another_did(
    store: Store, another_url: str
) -> None:
    first = await _first_message_id(store)
    async with open_store(another_url) as another:
        second = await _first_message_id(another)
    assert first != second
    assert first.startswith("msg_") and len(first) > len("msg_pause_1") + 16


async def _reassigned_message_id(store: Store) -> tuple[str, str]:
    """A pause reassigned by an operator: its pause id and its ``pause.reassigned`` id."""
    await store.register_webhook(URL, [WebhookEventType.PAUSE_REASSIGNED])
    pause = await paused(store, await new_session(store))
    at = T0 + timedelta(seconds=10)
    assert await store.reassign_pause(Reassignment(pause.pause_id, "finance", "olga", "away", at))
    (delivery,) = await store.list_deliveries(DeliveryQuery())
    return pause.pause_id, delivery.message_id


async def test_a_fresh_database_never_repeats_a_reassigned_pauses_id(
    store: Store, another_url: str
) -> None:
    pause_id, first = await _reassigned_message_id(store)
    async with open_store(another_url) as another:
        _, second = await _reassigned_message_id(another)
    assert first != second
    assert first.startswith(f"msg_pause_{pause_id}_")


async def test_a_lease_takes_only_its_destination_and_workers_never_share_a_row(
    store: Store, other: Store
) -> None:
    await store.register_webhook(URL, CREATED)
    await store.register_webhook(OTHER, CREATED)
    for _ in range(40):
        await paused(store, await new_session(store))
    now = T0 + timedelta(minutes=1)
    taken: dict[str, list[int]] = {"a": [], "b": []}

    async def lease(worker: Store, name: str) -> None:
        for _ in range(8):
            leased = await worker.lease_deliveries(DeliveryLease([URL], name, now, now + HOUR, 3))
            taken[name].extend(each.delivery.id for each in leased)

    async with anyio.create_task_group() as workers:
        workers.start_soon(lease, store, "a")
        workers.start_soon(lease, other, "b")
    both = taken["a"] + taken["b"]
    assert len(both) == len(set(both)) == 40  # every row of URL once, none of OTHER
    mine = {d.id for d in await store.list_deliveries(DeliveryQuery(url=URL, limit=100))}
    assert set(both) == mine
    due = await store.due_destinations([URL, OTHER], now)
    assert [circuit.url for circuit in due] == [OTHER]


async def test_a_circuit_changes_once_when_two_workers_race(store: Store, other: Store) -> None:
    await store.register_webhook(URL, CREATED)
    await other.register_webhook(URL, CREATED)  # a second worker: the circuit stays
    (seen,) = await store.webhook_destinations([URL])
    assert (seen.state, seen.failures, seen.version) == (CircuitState.CLOSED, 0, 0)
    opened = replace(seen, state=CircuitState.OPEN, failures=5, opens=1, retry_at=T0 + HOUR,
                     changed_at=T0, last_error="the receiver answered 500")
    assert await store.swap_destination(seen, opened)
    assert not await other.swap_destination(seen, replace(opened, failures=6))
    (now,) = await other.webhook_destinations()
    assert (now.state, now.failures, now.version) == (CircuitState.OPEN, 5, 1)
    assert now.retry_at == T0 + HOUR and now.last_error == "the receiver answered 500"


async def test_failed_deliveries_are_deleted_after_their_time_and_nothing_else(
    store: Store,
) -> None:
    await store.register_webhook(URL, CREATED)
    for _ in range(4):
        await paused(store, await new_session(store))
    leased = await store.lease_deliveries(DeliveryLease([URL], "a", T0, T0 + HOUR, 3))
    old, recent, delivered = (each.delivery.id for each in leased)
    week = timedelta(days=7)
    for id_, state, at in (
        (old, DeliveryState.FAILED, T0),
        (recent, DeliveryState.FAILED, T0 + week),
        (delivered, DeliveryState.DELIVERED, T0),
    ):
        assert await store.settle_deliveries([DeliverySettlement(id_, "a", state, at, at, 500)])
    cutoff = T0 + timedelta(days=1)
    assert await store.prune_failed_deliveries(cutoff, 100) == 1
    left = {d.id: d.state for d in await store.list_deliveries(DeliveryQuery())}
    assert old not in left
    assert sorted(left.values()) == sorted(
        [DeliveryState.FAILED, DeliveryState.DELIVERED, DeliveryState.PENDING]
    )
    assert await store.prune_failed_deliveries(cutoff, 100) == 0
