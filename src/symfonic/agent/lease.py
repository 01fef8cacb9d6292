"""Keeping a claim alive while its turn runs.

A claim carries a lease so that a worker that dies mid-resume leaves a row the
sweeper can move to ``abandoned``. A live turn renews the lease as its events
arrive; if the renewal finds the claim gone, the turn stops, because whatever
it would publish is no longer its to publish.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from symfonic.core.contracts.errors import PauseAbandoned
from symfonic.core.contracts.store import Store


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

    def until(self) -> datetime:
        return self._clock() + self._length

    async def keep(self) -> None:
        """Renew once a third of the lease has passed; cheap to call on every event."""
        now = self._clock()
        if now - self._renewed < self._length / 3:
            return
        if not await self._store.renew_claim(self._session_id, self._claim_id, now + self._length):
            raise PauseAbandoned(
                "this resume's claim lapsed while the turn ran; nothing will be published"
            )
        self._renewed = now
