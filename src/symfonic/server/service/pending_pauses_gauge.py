"""`symfonic.pauses.pending`: pending pauses by agent and kind, counted in the store every
`interval` seconds. Each worker counts the whole store: aggregate across workers with `max`, not
`sum`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import anyio
from opentelemetry.metrics import CallbackOptions, Observation

from symfonic.core.contracts.pause_listing import PauseListing
from symfonic.core.telemetry import instruments, names

logger = logging.getLogger("symfonic.http")

REFRESH_INTERVAL = 30.0


class PendingPauses:
    """The last count of pending pauses, refreshed from the store by `keep_counting`."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str], int] = {}

    def register(self) -> None:
        """Report the counts as the ``symfonic.pauses.pending`` gauge; once per process."""
        instruments.METER.create_observable_gauge(
            names.PAUSES_PENDING,
            callbacks=[self.observe],
            unit="{pause}",
            description="Pauses waiting for an answer, by agent and interaction kind",
        )

    async def refresh(self, store: PauseListing) -> None:
        counted = await store.count_pending()
        self._counts = {(group.agent, group.kind.value): group.count for group in counted}

    async def keep_counting(self, store: PauseListing, interval: float = REFRESH_INTERVAL) -> None:
        """Count now, then every ``interval`` seconds, until cancelled; a failed count
        keeps the last one (the store's outage is counted by the traced store)."""
        while True:
            try:
                await self.refresh(store)
            except Exception as error:  # the sweeper already logs the store's outages
                logger.debug("could not count the pending pauses: %s", error)
            await anyio.sleep(interval)

    def observe(self, options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(count, {names.AGENT: agent, names.INTERACTION_KIND: kind})
            for (agent, kind), count in sorted(self._counts.items())
        ]
