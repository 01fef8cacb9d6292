"""Keeping a claim alive while its turn runs.

A claim carries a lease so that a worker that dies mid-resume leaves a row the
sweeper can move to ``abandoned``. A live turn renews the lease as its events
arrive, and on a heartbeat while a tool runs (a tool yields no events, and may
run longer than the lease); if a renewal finds the claim gone, the turn stops at
its next event, because whatever it would publish is no longer its to publish.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from symfonic.core.contracts.errors import PauseAbandoned, StoreUnavailable
from symfonic.core.contracts.store import Store

logger = logging.getLogger(__name__)


class ClaimLease:
    def __init__(
        self,
        store: Store,
        session_id: str,
        claim_id: str,
        *,
        seconds: float,
        clock: Callable[[], datetime],
    ) -> None:
        self._store = store
        self._session_id = session_id
        self._claim_id = claim_id
        self._length = timedelta(seconds=seconds)
        self._clock = clock
        self._renewed = clock()
        self._lost = False
        self.interval = seconds / 3

    def until(self) -> datetime:
        return self._clock() + self._length

    async def keep(self) -> None:
        """Renew once a third of the lease has passed; cheap to call on every event."""
        now = self._clock()
        if not self._lost and now - self._renewed >= self._length / 3:
            await self._renew(now)
        if self._lost:
            raise PauseAbandoned(
                "this resume's claim lapsed while the turn ran; nothing will be published"
            )

    async def beat(self) -> None:
        """Renew now, while a tool runs; a lost claim is raised at the next ``keep``."""
        try:
            await self._renew(self._clock())
        except StoreUnavailable:
            # The next beat or event tries again; the lease has two thirds left.
            logger.warning("could not renew a claim's lease", exc_info=True)

    async def _renew(self, now: datetime) -> None:
        held = await self._store.renew_claim(self._session_id, self._claim_id, now + self._length)
        self._lost = not held
        if held:
            self._renewed = now
