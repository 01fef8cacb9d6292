"""The pause half of the storage port, on both stores: each transition is single-use.

Every test drives the port directly with explicit ``now`` values, so lease and
expiry are exact without waiting. Races are real: concurrent calls go through
two separately opened stores (two pools) on the same database.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from symfonic.core.contracts.errors import PauseAbandoned, RevisionConflict
from symfonic.core.contracts.store import (
    CheckpointRecord,
    Claim,
    NewPause,
    PauseQuery,
    PauseRecord,
    ResumePublish,
    RunRequest,
    SessionRecord,
    Store,
    TurnPublish,
)
from symfonic.core.contracts.types import InteractionKind, PauseState
from symfonic.storage import open_store

pytestmark = pytest.mark.anyio

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
TURN = [{"role": "human", "content": "hi"}, {"role": "ai", "content": "hello"}]


@pytest.fixture
async def other(store_url: str, store: Store) -> AsyncIterator[Store]:
    """A second worker's store on the same database (its own pool)."""
    async with open_store(store_url) as opened:
        yield opened


async def new_session(store: Store, principal: str = "ann") -> str:
    session_id = uuid.uuid4().hex
    await store.create_session(
        SessionRecord(session_id, principal, "assistant", 0, {}, created_at=T0)
    )
    return session_id


def pause_record(session_id: str, base_revision: int = 0, **fields: Any) -> PauseRecord:
    values: dict[str, Any] = {
        "pause_id": uuid.uuid4().hex,
        "session_id": session_id,
        "principal": "ann",
        "agent": "assistant",
        "audience": None,
        "kind": InteractionKind.INPUT,
        "query": "which colour?",
        "response_schema": {"type": "string"},
        "tool_call_id": "call_1",
        "interrupt_id": "int_1",
        "base_revision": base_revision,
        "state": PauseState.PENDING,
        "created_at": T0,
        "expires_at": T0 + HOUR,
    }
    values.update(fields)
    return PauseRecord(**values)


def checkpoint_of(pause: PauseRecord) -> CheckpointRecord:
    return CheckpointRecord(
        pause.pause_id, pause.session_id, 1, pause.base_revision, {"turn": [{"n": 1}]}
    )


async def paused(store: Store, session_id: str, **fields: Any) -> PauseRecord:
    pause = pause_record(session_id, **fields)
    await store.record_pause(NewPause(pause, checkpoint_of(pause)))
    return pause


def claim_of(
    pause: PauseRecord,
    answer: Any = "blue",
    *,
    lease: timedelta = HOUR,
    at: datetime = T0 + timedelta(minutes=1),
) -> Claim:
    """A claim of ``pause`` made at ``at``."""
    return Claim(pause.pause_id, uuid.uuid4().hex, "ann", answer, "resolved", at, at + lease)


async def claimed(store: Store, session_id: str, **fields: Any) -> tuple[PauseRecord, Claim]:
    pause = await paused(store, session_id, **fields)
    claim = claim_of(pause)
    assert await store.claim_pause(claim)
    return pause, claim


async def state_of(store: Store, pause_id: str) -> PauseState:
    pause = await store.get_pause(pause_id)
    assert pause is not None
    return pause.state


async def test_a_recorded_pause_and_its_checkpoint_read_back(store: Store) -> None:
    session_id = await new_session(store)
    pause = await paused(store, session_id, audience="finance")
    assert await store.get_pause(pause.pause_id) == pause
    assert await store.load_checkpoint(pause.pause_id) == checkpoint_of(pause)
    assert await store.get_pause("nope") is None and await store.load_checkpoint("nope") is None


async def test_the_mcp_server_that_asked_reads_back_from_the_row_and_the_listing(
    store: Store,
) -> None:
    session_id = await new_session(store)
    asked = await paused(store, session_id, kind=InteractionKind.FORM, server="bank")
    other = await paused(store, session_id, created_at=T0 + HOUR)
    read = await store.get_pause(asked.pause_id)
    assert read is not None and read.server == "bank"
    listed = await store.list_pauses(
        PauseQuery(PauseState.PENDING, principal="ann", scopes=frozenset())
    )
    assert [(p.pause_id, p.server) for p in listed] == [
        (asked.pause_id, "bank"),
        (other.pause_id, None),
    ]


async def test_of_concurrent_claims_from_two_workers_exactly_one_wins(
    store: Store, other: Store
) -> None:
    session_id = await new_session(store)
    pause = await paused(store, session_id)
    claims = [claim_of(pause, answer=f"answer {i}") for i in range(16)]
    won: list[Claim] = []

    async def attempt(worker: Store, claim: Claim) -> None:
        if await worker.claim_pause(claim):
            won.append(claim)

    async with anyio.create_task_group() as group:
        for i, claim in enumerate(claims):
            group.start_soon(attempt, (store, other)[i % 2], claim)
    assert len(won) == 1
    row = await store.get_pause(pause.pause_id)
    assert row is not None and row.state is PauseState.CLAIMED
    # The row holds the winner's claim and answer, not a mix of racers.
    assert (row.claim_id, row.answer, row.answered_by) == (won[0].claim_id, won[0].answer, "ann")
    assert row.lease_until == won[0].lease_until and row.answered_at == won[0].at


async def test_a_claim_needs_a_pending_unexpired_pause(store: Store) -> None:
    session_id = await new_session(store)
    pause = await paused(store, session_id)
    assert not await store.claim_pause(claim_of(pause, at=pause.expires_at))
    assert await state_of(store, pause.pause_id) is PauseState.PENDING
    assert await store.claim_pause(claim_of(pause, at=T0))
    assert not await store.claim_pause(claim_of(pause, at=T0))
    assert not await store.claim_pause(claim_of(pause_record(session_id), at=T0))


async def test_only_the_holder_renews_and_only_while_claimed(store: Store) -> None:
    session_id = await new_session(store)
    _, claim = await claimed(store, session_id)
    later = T0 + 2 * HOUR
    assert not await store.renew_claim(session_id, "someone-else", later)
    assert not await store.renew_claim("other-session", claim.claim_id, later)
    assert await store.renew_claim(session_id, claim.claim_id, later)
    row = await store.claimed_pause(session_id, claim.claim_id)
    assert row is not None and row.lease_until == later
    assert await store.abandon_claim(session_id, claim.claim_id)
    assert not await store.renew_claim(session_id, claim.claim_id, later + HOUR)


async def test_publish_appends_the_turn_and_settles_the_pause_together(store: Store) -> None:
    session_id = await new_session(store)
    pause, claim = await claimed(store, session_id)
    revision = await store.publish_resume(ResumePublish(session_id, claim.claim_id, TURN, "hello"))
    assert revision == 1
    row = await store.get_pause(pause.pause_id)
    assert row is not None and row.state is PauseState.PUBLISHED
    assert row.outcome == {"status": "complete", "answer": "hello"}
    assert await store.history(session_id, 1) == TURN
    assert await store.history(session_id, 0) == []
    assert await store.load_checkpoint(pause.pause_id) is None
    session = await store.get_session(session_id)
    assert session is not None and session.revision == 1
    # Single-use: the same claim cannot publish twice.
    with pytest.raises(PauseAbandoned):
        await store.publish_resume(ResumePublish(session_id, claim.claim_id, TURN, "hello"))
    assert await store.history(session_id, 99) == TURN


async def test_a_publish_that_loses_the_revision_race_writes_nothing(
    store: Store, other: Store
) -> None:
    session_id = await new_session(store)
    first, first_claim = await claimed(store, session_id)
    second, second_claim = await claimed(store, session_id)
    turns = {first_claim.claim_id: TURN, second_claim.claim_id: [{"role": "ai", "content": "x"}]}
    outcomes: dict[str, object] = {}

    async def publish(worker: Store, claim_id: str) -> None:
        try:
            outcomes[claim_id] = await worker.publish_resume(
                ResumePublish(session_id, claim_id, turns[claim_id], "done")
            )
        except RevisionConflict as conflict:
            outcomes[claim_id] = conflict

    async with anyio.create_task_group() as group:
        group.start_soon(publish, store, first_claim.claim_id)
        group.start_soon(publish, other, second_claim.claim_id)
    winners = [c for c, outcome in outcomes.items() if outcome == 1]
    assert len(winners) == 1
    loser = next(c for c in outcomes if c not in winners)
    assert isinstance(outcomes[loser], RevisionConflict)
    # The loser's pause update, history rows and checkpoint delete all rolled back.
    lost = first if loser == first_claim.claim_id else second
    row = await store.get_pause(lost.pause_id)
    assert row is not None and row.state is PauseState.CLAIMED and row.outcome is None
    assert await store.load_checkpoint(lost.pause_id) is not None
    assert await store.history(session_id, 99) == turns[winners[0]]
    session = await store.get_session(session_id)
    assert session is not None and session.revision == 1


async def test_a_lapsed_claim_cannot_publish(store: Store) -> None:
    session_id = await new_session(store)
    pause, claim = await claimed(store, session_id)
    report = await store.sweep(claim.lease_until)
    assert (report.expired, report.abandoned) == (0, 1)
    with pytest.raises(PauseAbandoned):
        await store.publish_resume(ResumePublish(session_id, claim.claim_id, TURN, "late"))
    assert await state_of(store, pause.pause_id) is PauseState.ABANDONED
    assert await store.history(session_id, 99) == []
    session = await store.get_session(session_id)
    assert session is not None and session.revision == 0


async def test_a_second_pause_supersedes_the_claim_in_one_transaction(store: Store) -> None:
    session_id = await new_session(store)
    first, claim = await claimed(store, session_id)
    follow = pause_record(session_id, tool_call_id="call_2")
    await store.record_pause(NewPause(follow, checkpoint_of(follow), supersedes=claim.claim_id))
    old = await store.get_pause(first.pause_id)
    assert old is not None and old.state is PauseState.SUPERSEDED
    assert old.outcome == {"status": "paused", "pause_id": follow.pause_id}
    assert await store.load_checkpoint(first.pause_id) is None
    new = await store.get_pause(follow.pause_id)
    assert new is not None and new.state is PauseState.PENDING
    assert new.supersedes == first.pause_id
    assert await store.load_checkpoint(follow.pause_id) == checkpoint_of(follow)
    assert await store.open_pause(session_id) == new


async def test_a_second_pause_for_a_lost_claim_writes_nothing(store: Store) -> None:
    session_id = await new_session(store)
    _, claim = await claimed(store, session_id)
    assert await store.abandon_claim(session_id, claim.claim_id)
    follow = pause_record(session_id)
    with pytest.raises(PauseAbandoned):
        await store.record_pause(NewPause(follow, checkpoint_of(follow), supersedes=claim.claim_id))
    assert await store.get_pause(follow.pause_id) is None
    assert await store.load_checkpoint(follow.pause_id) is None


async def test_a_second_pause_that_fails_to_insert_leaves_the_claim_as_it_was(
    store: Store,
) -> None:
    session_id = await new_session(store)
    first, claim = await claimed(store, session_id)
    clash = pause_record(session_id, pause_id=first.pause_id)  # a duplicate key
    with pytest.raises(Exception) as raised:
        await store.record_pause(NewPause(clash, checkpoint_of(clash), supersedes=claim.claim_id))
    assert "unique" in str(raised.value).lower() or "duplicate" in str(raised.value).lower()
    row = await store.get_pause(first.pause_id)
    assert row is not None and row.state is PauseState.CLAIMED and row.outcome is None
    assert await store.load_checkpoint(first.pause_id) == checkpoint_of(first)


async def test_only_the_holder_abandons_a_claim(store: Store) -> None:
    session_id = await new_session(store)
    pause, claim = await claimed(store, session_id)
    assert not await store.abandon_claim(session_id, "someone-else")
    assert await state_of(store, pause.pause_id) is PauseState.CLAIMED
    assert await store.abandon_claim(session_id, claim.claim_id)
    assert not await store.abandon_claim(session_id, claim.claim_id)
    assert await state_of(store, pause.pause_id) is PauseState.ABANDONED


async def test_abandon_pending_leaves_claims_and_other_sessions_alone(store: Store) -> None:
    session_id, elsewhere = await new_session(store), await new_session(store)
    waiting = await paused(store, session_id)
    busy, _ = await claimed(store, session_id)
    unrelated = await paused(store, elsewhere)
    assert await store.abandon_pending(session_id) == 1
    assert await state_of(store, waiting.pause_id) is PauseState.ABANDONED
    assert await state_of(store, busy.pause_id) is PauseState.CLAIMED
    assert await state_of(store, unrelated.pause_id) is PauseState.PENDING


async def test_sweep_expires_stale_pauses_and_abandons_lapsed_claims(
    store: Store, other: Store
) -> None:
    session_id = await new_session(store)
    stale = await paused(store, session_id, expires_at=T0 + timedelta(minutes=5))
    fresh = await paused(store, session_id)
    lapsed, lapsed_claim = await claimed(store, session_id)
    held, held_claim = await claimed(store, session_id)
    now = T0 + timedelta(minutes=30)
    assert await store.renew_claim(session_id, held_claim.claim_id, now + HOUR)
    await store.renew_claim(session_id, lapsed_claim.claim_id, now - timedelta(seconds=1))
    # Two workers sweeping at once move each row once between them.
    reports = []

    async def sweep(worker: Store) -> None:
        reports.append(await worker.sweep(now))

    async with anyio.create_task_group() as group:
        group.start_soon(sweep, store)
        group.start_soon(sweep, other)
    assert sum(r.expired for r in reports) == 1 and sum(r.abandoned for r in reports) == 1
    assert await state_of(store, stale.pause_id) is PauseState.EXPIRED
    assert await state_of(store, fresh.pause_id) is PauseState.PENDING
    assert await state_of(store, lapsed.pause_id) is PauseState.ABANDONED
    assert await state_of(store, held.pause_id) is PauseState.CLAIMED
    report = await store.sweep(now)
    assert (report.expired, report.abandoned) == (0, 0)


async def test_open_pause_and_the_audit_trail(store: Store) -> None:
    session_id = await new_session(store)
    assert await store.open_pause(session_id) is None
    first, claim = await claimed(store, session_id, created_at=T0)
    assert (await store.claimed_pause(session_id, claim.claim_id)) == await store.get_pause(
        first.pause_id
    )
    assert await store.claimed_pause(session_id, "nobody") is None
    assert await store.publish_resume(ResumePublish(session_id, claim.claim_id, TURN, "ok")) == 1
    assert await store.open_pause(session_id) is None
    second = await paused(store, session_id, base_revision=1, created_at=T0 + HOUR)
    opened = await store.open_pause(session_id)
    assert opened is not None and opened.pause_id == second.pause_id
    trail = await store.session_pauses(session_id)
    assert [p.pause_id for p in trail] == [first.pause_id, second.pause_id]
    assert trail[0].answer == "blue" and trail[0].answered_by == "ann"


async def test_list_pauses_shows_each_principal_what_it_may_answer(store: Store) -> None:
    anns, bobs = await new_session(store, "ann"), await new_session(store, "bob")
    own = await paused(store, anns, created_at=T0)
    finance = await paused(store, bobs, principal="bob", audience="finance", created_at=T0 + HOUR)
    await paused(store, bobs, principal="bob", created_at=T0 + 2 * HOUR)

    async def ids(principal: str, scopes: frozenset[str], limit: int = 100) -> list[str]:
        found = await store.list_pauses(PauseQuery(
            PauseState.PENDING, principal=principal, scopes=scopes, limit=limit
        ))
        return [p.pause_id for p in found]

    assert await ids("ann", frozenset()) == [own.pause_id]
    assert await ids("ann", frozenset({"finance"})) == [own.pause_id, finance.pause_id]
    assert len(await ids("root", frozenset({"*"}))) == 3
    assert await ids("root", frozenset({"*"}), limit=1) == [own.pause_id]
    assert await store.list_pauses(PauseQuery(
        PauseState.CLAIMED, principal="ann", scopes=frozenset({"*"})
    )) == []


async def test_a_run_is_refused_by_whatever_would_refuse_its_turn(store: Store) -> None:
    session_id = await new_session(store)
    await store.publish_turn(TurnPublish(session_id, 0, TURN, "seed"))
    now = T0 + timedelta(minutes=1)

    async def begin(run_id: str, **conditions: Any) -> Any:
        return await store.begin_run(RunRequest(
            session_id, run_id, now=now, lease_until=now + HOUR, **conditions
        ))

    assert await begin("r", principal="mallory") is None
    assert await begin("r", principal="ann", base_revision=0) is None
    assert await store.begin_run(RunRequest("nope", "r", now=now, lease_until=now + HOUR)) is None
    start = await begin("r", principal="ann", base_revision=1, refuse_pending=True)
    assert start is not None and start.history == TURN and not start.pending_pause
    assert (start.session.revision, start.session.running) == (1, True)
    await store.end_run(session_id, "r")
    # A pause waiting for an answer refuses a turn only when asked to.
    pause = await paused(store, session_id, base_revision=1)
    assert await begin("r", refuse_pending=True) is None
    start = await begin("r")
    assert start is not None and start.pending_pause
    await store.end_run(session_id, "r")
    # Past its expiry it is no longer waiting; being answered, it always refuses.
    later = pause.expires_at + timedelta(seconds=1)
    assert await store.begin_run(RunRequest(session_id, "r", now=later, lease_until=later + HOUR,
                                 refuse_pending=True)) is not None
    await store.end_run(session_id, "r")
    assert await store.claim_pause(claim_of(pause, at=now)) is not None
    assert await begin("r") is None


async def test_the_winning_claim_reads_the_turn_and_its_history(store: Store) -> None:
    session_id = await new_session(store)
    await store.publish_turn(TurnPublish(session_id, 0, TURN, "seed"))
    later_turn = [{"role": "human", "content": "later"}]
    pause = await paused(store, session_id, base_revision=1)
    # History published after the pause's base revision is not the pause's history.
    await store.publish_turn(TurnPublish(session_id, 1, later_turn, "other"))
    won = await store.claim_pause(claim_of(pause, at=T0))
    assert won is not None
    assert won.checkpoint == checkpoint_of(pause)
    assert won.history == TURN
    assert await store.claim_pause(claim_of(pause, at=T0)) is None


async def test_a_run_that_lost_its_hold_records_no_pause(store: Store) -> None:
    session_id = await new_session(store)
    now = T0 + timedelta(minutes=1)
    assert await store.begin_run(RunRequest(session_id, "slow", now=now, lease_until=now + HOUR))
    # The slow run's lease lapses and another turn takes the session.
    later = now + 2 * HOUR
    fast = RunRequest(session_id, "fast", now=later, lease_until=later + HOUR)
    assert await store.begin_run(fast)
    stale = pause_record(session_id)
    with pytest.raises(RevisionConflict, match="lapsed"):
        await store.record_pause(NewPause(stale, checkpoint_of(stale), run_id="slow"))
    assert await store.get_pause(stale.pause_id) is None
    assert await store.load_checkpoint(stale.pause_id) is None
    held = pause_record(session_id)
    await store.record_pause(NewPause(held, checkpoint_of(held), run_id="fast"))
    assert await state_of(store, held.pause_id) is PauseState.PENDING
    session = await store.get_session(session_id)
    assert session is not None and not session.running
