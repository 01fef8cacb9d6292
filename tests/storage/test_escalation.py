"""Escalation and reassignment in the store, on SQLite and PostgreSQL.

A step is applied once however many workers sweep at once; the audience before
keeps or loses access as the step says; the expiry moves only with ``extend``;
each re-addressing is one change on the feed and one webhook owed, with from
whom and why. A reassignment needs a pending pause.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import anyio
import pytest

from symfonic.capabilities.human.escalation import escalation
from symfonic.core.contracts.audit import verify_log
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.readdressing import ReaddressKind, Reassignment
from symfonic.core.contracts.retention import PruneBatch
from symfonic.core.contracts.store import PauseQuery, PauseRecord, Store
from symfonic.core.contracts.types import PauseState
from symfonic.core.contracts.webhooks import DeliveryQuery, WebhookEventType
from symfonic.storage import open_store
from symfonic.storage.sql_store import SqlStore
from symfonic.storage.statements import Statement
from test_store_pauses import HOUR, T0, new_session, paused

pytestmark = pytest.mark.anyio

LEADS = escalation(after=60, audience="team-leads")
URL = "http://receiver.invalid/hook"


@pytest.fixture
async def other(store_url: str, store: Store) -> AsyncIterator[Store]:
    """A second worker's store on the same database."""
    async with open_store(store_url) as opened:
        yield opened


async def escalating(store: Store, *steps: object, **fields: object) -> PauseRecord:
    session_id = await new_session(store)
    chain = steps or (LEADS,)
    return await paused(store, session_id, audience="approvers", escalations=chain, **fields)


async def listed(store: Store, principal: Principal) -> list[str]:
    query = PauseQuery(PauseState.PENDING, principal.name, principal.scopes)
    return [pause.pause_id for pause in await store.list_pauses(query)]


async def current(store: Store, pause_id: str) -> PauseRecord:
    pause = await store.get_pause(pause_id)
    assert pause is not None
    return pause


async def test_two_workers_sweeping_at_once_escalate_a_pause_once(
    store: Store, other: Store
) -> None:
    await store.register_webhook(URL, [WebhookEventType.PAUSE_ESCALATED])
    start = await store.pause_change_position()
    pause = await escalating(store)
    before = T0 + timedelta(seconds=59)
    assert await store.sweep(before) == await other.sweep(before)
    assert (await current(store, pause.pause_id)).audience == "approvers"

    counts: list[int] = []

    async def sweep(worker: Store) -> None:
        counts.append((await worker.sweep(T0 + timedelta(seconds=61))).escalated)

    async with anyio.create_task_group() as group:
        for worker in (store, other, store, other):
            group.start_soon(sweep, worker)

    assert sorted(counts) == [0, 0, 0, 1]
    escalated = await current(store, pause.pause_id)
    assert (escalated.audience, escalated.escalation_step) == ("team-leads", 1)
    assert escalated.state is PauseState.PENDING
    assert escalated.readdressed is not None
    assert (escalated.readdressed.kind, escalated.readdressed.previous) == (
        ReaddressKind.ESCALATED,
        "approvers",
    )
    changes = await store.pause_changes_since(start, limit=100)
    assert changes is not None
    mine = [(c.state, c.readdressed) for c in changes if c.pause.pause_id == pause.pause_id]
    assert mine == [(PauseState.PENDING, None), (PauseState.PENDING, ReaddressKind.ESCALATED)]
    owed = await store.list_deliveries(DeliveryQuery(type=WebhookEventType.PAUSE_ESCALATED))
    assert [(d.pause_id, d.detail) for d in owed] == [
        (
            pause.pause_id,
            {
                "previous": "approvers",
                "audience": "team-leads",
                "by": None,
                "reason": None,
                "after": 60.0,
            },
        )
    ]


@pytest.mark.parametrize("keep", [True, False])
async def test_the_audience_before_keeps_access_only_when_the_step_says(
    store: Store, keep: bool
) -> None:
    pause = await escalating(store, escalation(after=60, audience="team-leads", keep_previous=keep))
    await store.sweep(T0 + timedelta(minutes=2))
    approver = Principal("carol", frozenset({"approvers"}))
    lead = Principal("tom", frozenset({"team-leads"}))
    both = Principal("una", frozenset({"approvers", "team-leads"}))
    escalated = await current(store, pause.pause_id)

    assert await listed(store, lead) == [pause.pause_id]
    assert lead.may_answer(escalated)
    assert await listed(store, approver) == ([pause.pause_id] if keep else [])
    assert approver.may_answer(escalated) is keep
    # Someone in both audiences sees the pause once, and counts it once.
    assert await listed(store, both) == [pause.pause_id]
    query = PauseQuery(PauseState.PENDING, both.name, both.scopes)
    assert await store.count_pauses(query) == 1


async def test_an_owner_who_keeps_access_still_lists_the_escalated_pause(store: Store) -> None:
    session_id = await new_session(store)
    pause = await paused(store, session_id, escalations=(LEADS,))
    await store.sweep(T0 + timedelta(minutes=2))
    owner = Principal("ann")
    assert await listed(store, owner) == [pause.pause_id]
    assert owner.may_answer(await current(store, pause.pause_id))


async def test_escalation_never_moves_the_expiry_unless_it_extends(store: Store) -> None:
    plain = await escalating(store)
    extended = await escalating(store, escalation(after=60, audience="team-leads", extend=2 * 3600))
    at = T0 + timedelta(minutes=2)
    assert (await store.sweep(at)).escalated == 2

    assert (await current(store, plain.pause_id)).expires_at == T0 + HOUR
    assert (await current(store, extended.pause_id)).expires_at == at + timedelta(hours=2)


async def test_a_step_due_after_the_expiry_never_happens(store: Store) -> None:
    pause = await escalating(store, escalation(after=2 * 3600, audience="cfo"))
    report = await store.sweep(T0 + timedelta(hours=3))
    assert (report.escalated, report.expired) == (0, 1)
    expired = await current(store, pause.pause_id)
    assert (expired.state, expired.audience) == (PauseState.EXPIRED, "approvers")


async def test_a_late_sweep_applies_each_due_step_once_in_order(store: Store) -> None:
    start = await store.pause_change_position()
    chain = (LEADS, escalation(after=120, audience="cfo", keep_previous=False))
    pause = await escalating(store, *chain)
    assert (await store.sweep(T0 + timedelta(minutes=5))).escalated == 2

    escalated = await current(store, pause.pause_id)
    assert (escalated.audience, escalated.escalation_step) == ("cfo", 2)
    assert escalated.kept_audiences == ()
    changes = await store.pause_changes_since(start, limit=100)
    assert changes is not None
    assert [c.readdressed for c in changes] == [
        None,
        ReaddressKind.ESCALATED,
        ReaddressKind.ESCALATED,
    ]


async def test_a_reassignment_hands_over_a_pending_pause_and_only_a_pending_one(
    store: Store,
) -> None:
    await store.register_webhook(URL, [WebhookEventType.PAUSE_REASSIGNED])
    pause = await escalating(store)
    at = T0 + timedelta(seconds=10)
    asked = Reassignment(pause.pause_id, "finance", "olga", "carol is away", at)
    assert await store.reassign_pause(asked)

    moved = await current(store, pause.pause_id)
    assert (moved.audience, moved.kept_audiences, moved.expires_at) == ("finance", (), T0 + HOUR)
    assert moved.readdressed is not None
    assert (moved.readdressed.by, moved.readdressed.reason) == ("olga", "carol is away")
    # The operator chose who answers: the chain stops.
    assert (await store.sweep(T0 + timedelta(minutes=5))).escalated == 0
    assert await listed(store, Principal("carol", frozenset({"approvers"}))) == []
    owed = await store.list_deliveries(DeliveryQuery(type=WebhookEventType.PAUSE_REASSIGNED))
    assert [d.detail and d.detail["reason"] for d in owed] == ["carol is away"]

    await store.sweep(T0 + 2 * HOUR)
    late = Reassignment(pause.pause_id, "cfo", "olga", "too late", T0 + 2 * HOUR)
    assert not await store.reassign_pause(late)
    unknown = Reassignment(uuid.uuid4().hex, "cfo", "olga", "no such pause", at)
    assert not await store.reassign_pause(unknown)


async def audited(store: Store, pause_id: str) -> list[tuple[object, ...]]:
    """The pause's audit records once sealed: event, from and to whom, by whom, why."""
    await store.seal_audit()
    trail = await store.audit_records(after=0, limit=1000)
    return [
        (r.event, r.from_audience, r.to_audience, r.principal, r.reason)
        for r in trail
        if r.pause_id == pause_id
    ]


async def test_each_escalation_step_and_reassignment_is_one_audit_record(
    store: Store, other: Store
) -> None:
    pause = await escalating(store, LEADS, escalation(after=120, audience="cfo"))
    async with anyio.create_task_group() as group:
        for worker in (store, other):
            group.start_soon(worker.sweep, T0 + timedelta(seconds=61))
    at = T0 + timedelta(seconds=90)
    assert await store.reassign_pause(Reassignment(pause.pause_id, "finance", "olga", "away", at))
    late = Reassignment(pause.pause_id, "cfo", "olga", "too late", T0 + 2 * HOUR)
    await store.sweep(T0 + 2 * HOUR)
    assert not await store.reassign_pause(late)

    assert await audited(store, pause.pause_id) == [
        ("asked", None, None, "ann", None),
        ("escalated", "approvers", "team-leads", None, "nobody answered within 60 s"),
        ("reassigned", "team-leads", "finance", "olga", "away"),
        ("expired", None, None, None, "nobody answered before it expired"),
    ]
    assert (await verify_log(store))[1] is None


async def test_a_pause_escalated_from_its_owner_names_the_owner(store: Store) -> None:
    session_id = await new_session(store)
    pause = await paused(store, session_id, escalations=(LEADS,))
    await store.sweep(T0 + timedelta(minutes=2))
    assert (await audited(store, pause.pause_id))[1][:3] == (
        "escalated",
        "principal:ann",
        "team-leads",
    )
    assert (await verify_log(store))[1] is None


KEPT = Statement("SELECT count(*) AS kept FROM symfonic_pause_audiences WHERE pause_id = :pause_id")


@pytest.mark.parametrize("keep_answered", [False, True])
async def test_pruning_a_session_deletes_the_audiences_its_pauses_kept(
    store: Store, keep_answered: bool
) -> None:
    assert isinstance(store, SqlStore)
    keeping = escalation(after=60, audience="team-leads", keep_previous=True)
    pause = await escalating(store, keeping)
    await store.sweep(T0 + timedelta(minutes=2))
    await store.sweep(T0 + 2 * HOUR)  # it expires, so its session is finished

    async def kept() -> int:
        (row,) = await store.read_rows(KEPT, {"pause_id": pause.pause_id}, "kept")
        return int(row["kept"])

    assert await kept() == 1
    month = T0 + timedelta(days=31)
    report = await store.prune(PruneBatch(month - timedelta(days=1), month, 10, keep_answered))
    assert (report.sessions, report.pauses) == (1, 1)
    assert await kept() == 0
