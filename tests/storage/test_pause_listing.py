"""A principal's pauses a page at a time, on both stores: complete, stable, and theirs only.

Paging from the start to the end reaches every pause the principal may answer
exactly once, in ``(created_at, pause_id)`` order, even while pauses are being
created; the count says how many there are without reading them; the filters
narrow both alike.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from symfonic.core.contracts.store import PausePosition, PauseQuery, PauseRecord, Store
from symfonic.core.contracts.types import InteractionKind, PauseState
from test_store_pauses import T0, new_session, paused

pytestmark = pytest.mark.anyio

MINUTE = timedelta(minutes=1)


def query(
    principal: str = "ann", scopes: frozenset[str] = frozenset(), **fields: Any
) -> PauseQuery:
    return PauseQuery(PauseState.PENDING, principal, scopes, **fields)


async def every_page(store: Store, base: PauseQuery, limit: int) -> list[PauseRecord]:
    """Each page in turn, starting after the last pause of the one before, until one is short."""
    seen: list[PauseRecord] = []
    while True:
        after = PausePosition.of(seen[-1]) if seen else None
        page = await store.list_pauses(
            PauseQuery(**{**base.__dict__, "limit": limit, "after": after})
        )
        assert len(page) <= limit
        seen += page
        if len(page) < limit:
            return seen


async def test_paging_reaches_every_pause_once_in_order(store: Store) -> None:
    anns, bobs = await new_session(store, "ann"), await new_session(store, "bob")
    made = []
    for i in range(23):
        # Several pauses share each instant: the id breaks the tie.
        at = T0 + (i // 3) * MINUTE
        if i % 2:
            made.append(
                await paused(store, bobs, principal="bob", audience="finance", created_at=at)
            )
        else:
            made.append(await paused(store, anns, created_at=at))
    finance = query(scopes=frozenset({"finance"}))

    listed = await every_page(store, finance, limit=4)

    expected = sorted(made, key=PausePosition.of)
    assert [p.pause_id for p in listed] == [p.pause_id for p in expected]
    assert await store.count_pauses(finance) == 23
    assert (
        await store.count_pauses(
            PauseQuery(**{**finance.__dict__, "after": PausePosition.of(listed[5])})
        )
        == 23
    )


async def test_pages_stay_stable_while_pauses_are_created(store: Store) -> None:
    session_id = await new_session(store, "ann")
    first = [await paused(store, session_id, created_at=T0 + i * MINUTE) for i in range(10)]
    seen: list[PauseRecord] = []
    later: list[PauseRecord] = []
    while True:
        after = PausePosition.of(seen[-1]) if seen else None
        page = await store.list_pauses(query(limit=3, after=after))
        seen += page
        # One newer than everything, one at the very instant of the last pause seen:
        # the first comes on a later page, the second only if its id sorts after.
        later.append(await paused(store, session_id, created_at=T0 + (100 + len(later)) * MINUTE))
        if page:
            await paused(store, session_id, created_at=page[-1].created_at)
        if len(page) < 3:
            break

    ids = [p.pause_id for p in seen]
    assert len(ids) == len(set(ids)), "a pause was listed twice"
    assert {p.pause_id for p in first} <= set(ids), "a pause was skipped"
    assert [PausePosition.of(p) for p in seen] == sorted(PausePosition.of(p) for p in seen)
    assert {p.pause_id for p in later[:-1]} <= set(ids)


async def test_a_principal_sees_only_its_own_and_its_audiences_pauses(store: Store) -> None:
    anns, bobs = await new_session(store, "ann"), await new_session(store, "bob")
    own = [await paused(store, anns, created_at=T0 + i * MINUTE) for i in range(3)]
    finance = [
        await paused(store, bobs, principal="bob", audience="finance", created_at=T0 + i * MINUTE)
        for i in range(4)
    ]
    bobs_own = await paused(store, bobs, principal="bob")
    hr = await paused(store, bobs, principal="bob", audience="hr")
    # Addressed to legal: having asked it does not make it ann's to answer.
    await paused(store, anns, audience="legal")

    def ids(pauses: list[PauseRecord]) -> set[str]:
        return {p.pause_id for p in pauses}

    alone = query()
    assert ids(await every_page(store, alone, 2)) == ids(own)
    assert await store.count_pauses(alone) == 3
    scoped = query(scopes=frozenset({"finance"}))
    assert ids(await every_page(store, scoped, 2)) == ids(own + finance)
    assert await store.count_pauses(scoped) == 7
    everyone = query("root", frozenset({"*"}))
    assert {bobs_own.pause_id, hr.pause_id} <= ids(await every_page(store, everyone, 3))
    assert await store.count_pauses(everyone) == 10
    # Naming an audience the principal does not hold shows nothing, never its pauses.
    assert await store.list_pauses(query(audience="hr")) == []
    assert await store.count_pauses(query(audience="hr")) == 0


async def test_filters_narrow_the_page_and_the_count_alike(store: Store) -> None:
    session_id = await new_session(store, "ann")
    colour = await paused(store, session_id, query="Which COLOUR, 100% sure?")
    refund = await paused(
        store,
        session_id,
        kind=InteractionKind.APPROVAL,
        query="Refund 5_000?",
        agent="payments",
        audience="finance",
        created_at=T0 + MINUTE,
    )
    stale = await paused(
        store, session_id, query="old colour", created_at=T0 + MINUTE / 2, expires_at=T0 + MINUTE
    )
    scopes = frozenset({"finance"})

    async def found(**fields: Any) -> list[str]:
        narrowed = query(scopes=scopes, **fields)
        pauses = await store.list_pauses(narrowed)
        assert await store.count_pauses(narrowed) == len(pauses)
        return [p.pause_id for p in pauses]

    assert await found() == [colour.pause_id, stale.pause_id, refund.pause_id]
    assert await found(text="colour") == [colour.pause_id, stale.pause_id]
    # Wildcards in the text are the characters themselves.
    assert await found(text="100% s") == [colour.pause_id]
    assert await found(text="%") == [colour.pause_id]
    assert await found(text="5_0") == [refund.pause_id]
    assert await found(text="5%0") == []
    assert await found(kind=InteractionKind.APPROVAL) == [refund.pause_id]
    assert await found(agents=frozenset({"payments"})) == [refund.pause_id]
    assert await found(agents=frozenset()) == []
    assert await found(audience="finance") == [refund.pause_id]
    assert await found(unexpired_at=T0 + MINUTE) == [colour.pause_id, refund.pause_id]
    assert await found(text="colour", kind=InteractionKind.INPUT, unexpired_at=T0 + MINUTE) == [
        colour.pause_id
    ]
