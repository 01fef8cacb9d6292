"""What an agent does on its store outside a turn: sessions, pauses, sweep and prune.

A transport creates sessions, lists the pauses a principal may answer, mints
their tokens and runs the sweeper through these calls, never through the store
itself, so each one opens the store first (a fresh worker's first request may
be any of them) and reads the time from the agent's clock. The turns, and
reading a session as its owner (the turns' own rule), are
:class:`~symfonic.SymfonicAgent`'s.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from symfonic.agent.opened_store import OpenedStore
from symfonic.agent.retention import Retention, prune
from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import (
    PausePosition,
    PauseQuery,
    PauseRecord,
    PruneReport,
    SessionRecord,
    SweepReport,
    TurnPublish,
)
from symfonic.core.contracts.types import PauseState
from symfonic.core.messages import MessageBody

# How many pauses one read of ``pauses()`` takes from the store.
PAGE = 500


class SessionsAndPauses(OpenedStore):
    """The agent's sessions and pauses, read and written on its opened store."""

    name: str
    clock: Callable[[], datetime]

    async def create_session(
        self,
        principal: Principal | str = "local",
        metadata: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
    ) -> str:
        """A new session for ``principal``; ``session_id`` lets a transport choose the id."""
        await self.open()
        session_id = session_id or uuid.uuid4().hex
        await self.store.create_session(
            SessionRecord(
                session_id=session_id,
                principal=Principal.of(principal).name,
                agent=self.name,
                revision=0,
                metadata=dict(metadata or {}),
                created_at=self.clock(),
            )
        )
        return session_id

    async def seed_history(self, session_id: str, bodies: Sequence[MessageBody]) -> int:
        """Commit ``bodies`` as one published turn (imports, tests, benchmarks)."""
        await self.open()
        session = await self.store.get_session(session_id)
        if session is None:
            raise ConfigurationError(f"no session {session_id!r}")
        seed = TurnPublish(session_id, session.revision, list(bodies), run_id="seed")
        return await self.store.publish_turn(seed)

    async def pauses(
        self, principal: Principal | str = "local", state: PauseState = PauseState.PENDING
    ) -> list[PauseRecord]:
        """Every pause this principal may answer, oldest first, read a page at a time.

        A pending pause past its expiry is left out, whether or not the sweeper
        has marked it yet: it cannot be answered, and offering it would only
        invite a 410.
        """
        await self.open()
        who = Principal.of(principal)
        unexpired = self.clock() if state is PauseState.PENDING else None
        listed: list[PauseRecord] = []
        while True:
            after = PausePosition.of(listed[-1]) if listed else None
            query = PauseQuery(
                state, who.name, who.scopes, limit=PAGE, after=after, unexpired_at=unexpired
            )
            page = await self.store.list_pauses(query)
            listed += page
            if len(page) < PAGE:
                return listed

    def token_for(self, pause: PauseRecord) -> str:
        return self.settlement.signer.mint(pause.pause_id)

    async def sweep(self) -> SweepReport:
        """Expire stale pauses and abandon claims whose worker stopped renewing."""
        await self.open()
        return await self.store.sweep(self.clock())

    async def prune(
        self, retention: Retention, on_batch: Callable[[PruneReport], None] | None = None
    ) -> PruneReport:
        """Delete finished sessions idle for longer than the retention keeps them."""
        await self.open()
        return await prune(self.store, retention, self.clock(), on_batch)
