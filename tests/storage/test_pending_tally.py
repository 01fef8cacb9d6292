"""A listing's total, read from the database's tally, is the count of the pauses listed.

The tally (pending pauses per holder, agent and kind) is kept by triggers, so
whatever moves a pause moves its count. Random runs of every way a pause comes
and goes (created, a delegate's own, claimed, answered, expired by the sweep,
its claim lapsed, abandoned, superseded, its session pruned, deleted outright)
are checked after each step, on both stores: for many queries, the total
equals the same query counted row by row and the number of pauses it lists,
and the pending gauge equals a count of the pending pauses.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
import sqlalchemy as sa

from symfonic.core.contracts.store import (
    Claim,
    NewPause,
    PauseQuery,
    PauseRecord,
    PruneBatch,
    ResumePublish,
    Store,
)
from symfonic.core.contracts.types import InteractionKind, PauseState
from symfonic.storage import open_store, pause_listing
from symfonic.storage.sql_store import SqlStore
from symfonic.storage.statements import Statement
from test_migrate import _migrated, _session_row, _tables_at
from test_store_pauses import T0, checkpoint_of, new_session, pause_record

pytestmark = pytest.mark.anyio

MINUTE = timedelta(minutes=1)
PRINCIPALS = ("ann", "bob", "carol")
AUDIENCES = (None, None, "finance", "ops", "ann")  # a scope may share a principal's name
AGENTS = ("assistant", "triage")
KINDS = (InteractionKind.APPROVAL, InteractionKind.INPUT)
STEPS = 60


@dataclass
class World:
    """What the run made: the store's pauses by id, and the clock."""

    store: SqlStore
    rng: random.Random
    now: int = 0  # minutes after T0
    pauses: dict[str, PauseRecord] = field(default_factory=dict)
    claims: dict[str, Claim] = field(default_factory=dict)  # pause_id -> its claim
    seen: set[PauseState] = field(default_factory=set)  # every state a pause was found in

    async def refreshed(self) -> None:
        for pause_id in list(self.pauses):
            pause = await self.store.get_pause(pause_id)
            if pause is None:
                del self.pauses[pause_id]
                self.claims.pop(pause_id, None)
            else:
                self.pauses[pause_id] = pause
                self.seen.add(pause.state)

    def in_state(self, state: PauseState) -> list[PauseRecord]:
        return [p for p in self.pauses.values() if p.state is state]


async def _create(world: World) -> None:
    rng = world.rng
    principal = rng.choice(PRINCIPALS)
    session_id = await new_session(world.store, principal)
    delegate = rng.random() < 0.15
    pause = pause_record(
        session_id,
        principal=principal,
        audience=rng.choice(AUDIENCES),
        agent=rng.choice(AGENTS),
        kind=rng.choice(KINDS),
        created_at=T0 + world.now * MINUTE,
        expires_at=T0 + (world.now + rng.randint(1, 30)) * MINUTE,
        parent_session_id=uuid.uuid4().hex if delegate else None,
    )
    await world.store.record_pause(NewPause(pause, checkpoint_of(pause)))


async def _claim(world: World) -> None:
    pending = world.in_state(PauseState.PENDING)
    if not pending:
        return
    pause = world.rng.choice(pending)
    at = T0 + world.now * MINUTE
    claim = Claim(pause.pause_id, uuid.uuid4().hex, "ann", "yes", "resolved", at, at + 5 * MINUTE)
    if await world.store.claim_pause(claim):
        world.claims[pause.pause_id] = claim


async def _answer(world: World) -> None:
    claimed = [p for p in world.in_state(PauseState.CLAIMED) if p.pause_id in world.claims]
    if claimed:
        pause = world.rng.choice(claimed)
        claim = world.claims[pause.pause_id]
        publish = ResumePublish(pause.session_id, claim.claim_id, [{"role": "ai"}], "yes")
        await world.store.publish_resume(publish)


async def _supersede(world: World) -> None:
    claimed = [p for p in world.in_state(PauseState.CLAIMED) if p.pause_id in world.claims]
    if claimed:
        old = world.rng.choice(claimed)
        claim = world.claims[old.pause_id]
        follow = pause_record(
            old.session_id,
            principal=old.principal,
            audience=world.rng.choice(AUDIENCES),
            agent=old.agent,
            kind=world.rng.choice(KINDS),
            tool_call_id="call_2",
            created_at=T0 + world.now * MINUTE,
            expires_at=T0 + (world.now + world.rng.randint(1, 30)) * MINUTE,
        )
        await world.store.record_pause(
            NewPause(follow, checkpoint_of(follow), supersedes=claim.claim_id)
        )


async def _abandon(world: World) -> None:
    pending = world.in_state(PauseState.PENDING)
    if pending:
        await world.store.abandon_pending(world.rng.choice(pending).session_id)


async def _time_passes(world: World) -> None:
    world.now += world.rng.randint(1, 8)


async def _sweep(world: World) -> None:
    await world.store.sweep(T0 + world.now * MINUTE)


async def _prune(world: World) -> None:
    cutoff = T0 + timedelta(days=400)
    await world.store.prune(PruneBatch(cutoff, cutoff, 5, keep_answered=False))


async def _delete(world: World) -> None:
    """A pause deleted outright, in whatever state (no port call does this to a pending one)."""
    if world.pauses:
        pause_id = world.rng.choice(sorted(world.pauses))
        await world.store.write_rows(
            Statement("DELETE FROM symfonic_pauses WHERE pause_id = :pause_id"),
            {"pause_id": pause_id},
            "delete",
        )


STEPS_BY_WEIGHT = (
    (_create, 8),
    (_claim, 3),
    (_answer, 2),
    (_supersede, 3),
    (_abandon, 1),
    (_time_passes, 3),
    (_sweep, 2),
    (_prune, 1),
    (_delete, 1),
)


def _queries(world: World) -> list[PauseQuery]:
    """Queries of every shape, drawn at random: ranges, filters, expiry."""
    rng = world.rng
    queries = []
    for _ in range(6):
        scopes = frozenset(rng.sample(("finance", "ops", "ann", "*"), rng.randint(0, 2)))
        unexpired = rng.choice([None, world.now - 3, world.now, world.now + 10])
        queries.append(
            PauseQuery(
                PauseState.PENDING,
                rng.choice(PRINCIPALS),
                scopes,
                limit=1000,
                agents=rng.choice([None, frozenset(AGENTS), frozenset({"triage"}), frozenset()]),
                kind=rng.choice([None, *KINDS]),
                audience=rng.choice([None, None, "finance", "ann", "ops"]),
                unexpired_at=None if unexpired is None else T0 + unexpired * MINUTE,
            )
        )
    return queries


async def _check(world: World) -> None:
    for query in _queries(world):
        listed = await world.store.list_pauses(query)
        total = await world.store.count_pauses(query)
        counted = await pause_listing.count_rows(world.store, query)
        assert total == counted == len(listed), (query, total, counted, len(listed))
    pending = Counter(
        (p.agent, p.kind) for p in world.in_state(PauseState.PENDING) if p.parent_session_id is None
    )
    gauge = {(c.agent, c.kind): c.count for c in await world.store.count_pending()}
    assert gauge == dict(pending)


@pytest.mark.parametrize("seed", [1, 2])
async def test_the_tallied_total_is_the_counted_total_after_every_change(
    store: Store, seed: int
) -> None:
    assert isinstance(store, SqlStore)
    world = World(store, random.Random(seed))
    steps, weights = zip(*STEPS_BY_WEIGHT, strict=True)
    for _ in range(STEPS):
        step = world.rng.choices(steps, weights)[0]
        await step(world)
        if step is _create or step is _supersede:
            world.pauses.update({p.pause_id: p for p in await _all_pauses(world)})
        await world.refreshed()
        await _check(world)
    # The run went through every way a pause leaves the pending state.
    assert world.seen == set(PauseState)


async def _all_pauses(world: World) -> list[PauseRecord]:
    rows = await world.store.read_rows(
        Statement("SELECT pause_id FROM symfonic_pauses"), {}, "pause_ids"
    )
    found = [await world.store.get_pause(row["pause_id"]) for row in rows]
    return [pause for pause in found if pause is not None]


async def test_a_text_filter_is_counted_row_by_row(store: Store) -> None:
    session_id = await new_session(store, "ann")
    for query in ("pay bob?", "pay carol?", "ship it?"):
        pause = pause_record(session_id, query=query)
        await store.record_pause(NewPause(pause, checkpoint_of(pause)))
    pays = PauseQuery(PauseState.PENDING, "ann", frozenset(), text="PAY")
    assert await store.count_pauses(pays) == 2
    everything = PauseQuery(PauseState.PENDING, "ann", frozenset())
    assert await store.count_pauses(everything) == 3


def _pauses_before_the_tally(connection: sa.Connection) -> None:
    """The schema before the tally, holding pauses of every kind of range and state."""
    tables = _tables_at(connection, "0013")
    connection.execute(tables["symfonic_sessions"].insert().values(_session_row("s1", T0)))
    rows = [
        ("own", "pending", None, None),
        ("own_2", "pending", None, None),
        ("scoped", "pending", "finance", None),
        ("delegate", "pending", "finance", "parent"),
        ("answered", "published", "finance", None),
    ]
    for pause_id, state, audience, parent in rows:
        record = pause_record("s1", pause_id=pause_id, state=state, audience=audience)
        connection.execute(
            tables["symfonic_pauses"]
            .insert()
            .values(
                pause_id=pause_id,
                session_id="s1",
                principal="ann",
                agent="assistant",
                audience=audience,
                kind=record.kind.value,
                query=record.query,
                response_schema=record.response_schema,
                tool_call_id="call_1",
                interrupt_id=f"int_{pause_id}",
                base_revision=0,
                state=state,
                created_at=T0,
                expires_at=T0 + timedelta(hours=1),
                parent_session_id=parent,
            )
        )


async def test_the_upgrade_counts_the_pauses_already_waiting(store_url: str) -> None:
    await _migrated(store_url, _pauses_before_the_tally)
    async with open_store(store_url) as store:  # opening upgrades the schema to head
        assert isinstance(store, SqlStore)
        own = PauseQuery(PauseState.PENDING, "ann", frozenset())
        finance = PauseQuery(PauseState.PENDING, "bob", frozenset({"finance"}))
        everything = PauseQuery(PauseState.PENDING, "carol", frozenset({"*"}))
        assert [await store.count_pauses(q) for q in (own, finance, everything)] == [2, 1, 3]
        counts = await store.count_pending()
        assert [(c.agent, c.count) for c in counts] == [("assistant", 3)]
