"""Many pending pauses written straight through the storage port, fast.

Listing and paging tests need hundreds or thousands of pauses; running a turn
for each would test the model loop, not the listing. These are real pauses
(a session, a pending row, a checkpoint), so the API lists, counts, feeds and
details them as any other; they are not meant to be resumed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

import anyio

from symfonic.core.contracts.store import (
    CheckpointRecord,
    NewPause,
    PauseRecord,
    SessionRecord,
    Store,
)
from symfonic.core.contracts.types import InteractionKind, PauseState

CONCURRENCY = 16


def waiting_pause(
    session_id: str,
    query: str,
    *,
    created_at: datetime,
    principal: str = "alice",
    agent: str = "assistant",
    audience: str | None = None,
    kind: InteractionKind = InteractionKind.INPUT,
) -> PauseRecord:
    return PauseRecord(
        pause_id=uuid.uuid4().hex,
        session_id=session_id,
        principal=principal,
        agent=agent,
        audience=audience,
        kind=kind,
        query=query,
        response_schema={"type": "string"},
        tool_call_id=f"call_{uuid.uuid4().hex[:8]}",
        interrupt_id=uuid.uuid4().hex,
        base_revision=0,
        state=PauseState.PENDING,
        created_at=created_at,
        expires_at=created_at + timedelta(days=1),
    )


async def bulk_pauses(
    store: Store,
    queries: Sequence[str],
    *,
    start: datetime,
    principal: str = "alice",
    agent: str = "assistant",
    audience: str | None = None,
    kind: InteractionKind = InteractionKind.INPUT,
) -> list[PauseRecord]:
    """One pause per query, a millisecond apart from ``start``, all in one new session."""
    made: list[PauseRecord] = []
    session_id = uuid.uuid4().hex
    await store.create_session(SessionRecord(session_id, principal, agent, 0, {}, start))

    async def one(i: int, query: str) -> None:
        pause = waiting_pause(
            session_id,
            query,
            created_at=start + timedelta(milliseconds=i),
            principal=principal,
            agent=agent,
            audience=audience,
            kind=kind,
        )
        checkpoint = CheckpointRecord(pause.pause_id, session_id, 1, 0, {"messages": []})
        await store.record_pause(NewPause(pause, checkpoint))
        made.append(pause)

    limiter = anyio.CapacityLimiter(CONCURRENCY)

    async def limited(i: int, query: str) -> None:
        async with limiter:
            await one(i, query)

    async with anyio.create_task_group() as group:
        for i, query in enumerate(queries):
            group.start_soon(limited, i, query)
    return sorted(made, key=lambda p: (p.created_at, p.pause_id))
