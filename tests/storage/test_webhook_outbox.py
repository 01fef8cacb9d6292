"""The outbox in the store: what each transition owes, once, and only if it commits."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from symfonic.core.contracts.store import NewPause, PruneBatch, Store
from symfonic.core.contracts.webhooks import (
    DeliveryLease,
    DeliveryQuery,
    DeliverySettlement,
    DeliveryState,
    FailedTurn,
    WebhookEventType,
)
from symfonic.storage import open_store
from test_store_pauses import (
    HOUR,
    T0,
    checkpoint_of,
    claimed,
    new_session,
    pause_record,
    paused,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
async def other(store_url: str, store: Store) -> AsyncIterator[Store]:
    """A second worker's store on the same database (its own pool)."""
    async with open_store(store_url) as opened:
        yield opened

URL = "http://127.0.0.1:9/hook"
ALL = sorted(WebhookEventType)


async def owed(store: Store) -> list[tuple[str, str | None]]:
    found = await store.list_deliveries(DeliveryQuery(limit=1000))
    return [(d.type.value, d.pause_id) for d in reversed(found)]


async def test_no_subscription_owes_nothing(store: Store) -> None:
    session_id = await new_session(store)
    await claimed(store, session_id)
    assert await owed(store) == []


async def test_each_change_of_state_owes_its_event_once(store: Store) -> None:
    await store.register_webhook(URL, ALL)
    session_id = await new_session(store)
    pause, claim = await claimed(store, session_id)  # created, then claimed (no event)
    follow = pause_record(session_id, tool_call_id="call_2")
    await store.record_pause(NewPause(follow, checkpoint_of(follow), supersedes=claim.claim_id))
    await store.abandon_pending(session_id)
    assert await owed(store) == [
        ("pause.created", pause.pause_id),
        ("pause.superseded", pause.pause_id),
        ("pause.created", follow.pause_id),
        ("pause.abandoned", follow.pause_id),
    ]


async def test_a_transition_that_rolls_back_owes_nothing(store: Store) -> None:
    await store.register_webhook(URL, ALL)
    session_id = await new_session(store)
    first, claim = await claimed(store, session_id)
    before = await owed(store)
    # The supersede runs (owing pause.superseded), then the insert fails: both roll back.
    clash = pause_record(session_id, pause_id=first.pause_id)
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        await store.record_pause(NewPause(clash, checkpoint_of(clash), supersedes=claim.claim_id))
    assert await owed(store) == before


async def test_a_failed_turn_is_owed_once_however_often_its_cleanup_runs(store: Store) -> None:
    await store.register_webhook(URL, [WebhookEventType.TURN_FAILED])
    session_id = await new_session(store)
    failure = FailedTurn("run-1", session_id, "assistant", "model_error", "the model failed", T0)
    await store.end_run(session_id, "run-1", failure)
    await store.end_run(session_id, "run-1", failure)  # a retried cleanup
    _, claim = await claimed(store, session_id)
    resumed = FailedTurn(claim.claim_id, session_id, "assistant", "internal", "boom", T0,
                         pause_id=claim.pause_id)
    assert await store.abandon_claim(session_id, claim.claim_id, resumed)
    assert not await store.abandon_claim(session_id, claim.claim_id, resumed)
    (second, first) = await store.list_deliveries(DeliveryQuery(limit=10))
    assert (first.message_id, first.pause_id) == ("msg_turn_failed_run-1", None)
    assert first.detail == {"agent": "assistant", "code": "model_error",
                            "message": "the model failed"}
    assert second.pause_id == claim.pause_id


async def test_expiring_is_owed_once_at_the_lead_or_a_tenth_of_the_lifetime(
    store: Store,
) -> None:
    await store.register_webhook(URL, [WebhookEventType.PAUSE_EXPIRING])
    session_id = await new_session(store)
    hour = await paused(store, session_id)  # an hour's lifetime: a tenth is 6 minutes
    day = await paused(store, await new_session(store), expires_at=T0 + timedelta(days=1))
    lead = 3600.0
    assert await store.announce_expiring(T0 + timedelta(minutes=53), lead) == 0
    assert await store.announce_expiring(T0 + timedelta(minutes=55), lead) == 1
    assert await store.announce_expiring(T0 + timedelta(minutes=59), lead) == 0  # once
    assert await owed(store) == [("pause.expiring", hour.pause_id)]
    assert await store.announce_expiring(T0 + timedelta(hours=23, minutes=1), lead) == 1
    assert await store.announce_expiring(T0 + timedelta(days=1, seconds=1), lead) == 0
    assert [p for _, p in await owed(store)] == [hour.pause_id, day.pause_id]


async def test_a_lease_is_exclusive_and_only_its_holder_settles(store: Store, other: Store) -> None:
    await store.register_webhook(URL, [WebhookEventType.PAUSE_CREATED])
    session_id = await new_session(store)
    pause = await paused(store, session_id)
    now = T0 + timedelta(minutes=1)
    taken = await store.lease_deliveries(DeliveryLease([URL], "a", now, now + HOUR, 10))
    assert [leased.pause.pause_id for leased in taken if leased.pause] == [pause.pause_id]
    assert await other.lease_deliveries(DeliveryLease([URL], "b", now, now + HOUR, 10)) == []
    later = now + 2 * HOUR  # a's lease lapsed: b takes it, and a can no longer settle
    (again,) = await other.lease_deliveries(DeliveryLease([URL], "b", later, later + HOUR, 10))
    assert again.delivery.attempts == 2
    settle = DeliverySettlement(again.delivery.id, "a", DeliveryState.DELIVERED, later, later, 200)
    assert not await store.settle_delivery(settle)
    assert await other.settle_delivery(DeliverySettlement(
        again.delivery.id, "b", DeliveryState.DELIVERED, later, later, 200))
    assert await store.due_destinations([URL], later + 10 * HOUR) == []


async def test_retention_deletes_old_delivered_deliveries_and_the_trigger_survives_the_trim(
    store: Store,
) -> None:
    await store.register_webhook(URL, [WebhookEventType.PAUSE_CREATED])
    session_id = await new_session(store)
    await paused(store, session_id)
    (leased,) = await store.lease_deliveries(DeliveryLease([URL], "a", T0, T0 + HOUR, 10))
    done = DeliverySettlement(leased.delivery.id, "a", DeliveryState.DELIVERED, T0, T0, 200)
    assert await store.settle_delivery(done)
    await paused(store, await new_session(store))  # pending: kept
    cutoff = T0 + timedelta(days=400)
    await store.prune(PruneBatch(cutoff=cutoff, now=cutoff, batch=100, keep_answered=False))
    assert [d.state for d in await store.list_deliveries(DeliveryQuery())] == [
        DeliveryState.PENDING
    ]
    await paused(store, await new_session(store))  # the change record was trimmed
    assert len(await store.list_deliveries(DeliveryQuery())) == 2


async def test_a_lease_takes_no_more_than_its_limit_oldest_first(store: Store) -> None:
    await store.register_webhook(URL, [WebhookEventType.PAUSE_CREATED])
    pauses = [await paused(store, await new_session(store)) for _ in range(5)]
    now = T0 + timedelta(minutes=1)
    taken = await store.lease_deliveries(DeliveryLease([URL], "a", now, now + HOUR, 2))
    assert [leased.delivery.pause_id for leased in taken] == [p.pause_id for p in pauses[:2]]
    rest = await store.lease_deliveries(DeliveryLease([URL], "b", now, now + HOUR, 10))
    assert [leased.delivery.pause_id for leased in rest] == [p.pause_id for p in pauses[2:]]
