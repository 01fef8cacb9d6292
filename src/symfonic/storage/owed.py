"""Cleanups the store could not write when they were due, kept until it can.

A turn that fails after winning its claim abandons the claim; if the store
cannot write at that moment (a full disk, an outage longer than the cleanup's
retries), the pause would stay ``claimed`` until its lease runs out and a sweep
finds it. Instead the store keeps the cleanup here and every sweep runs the
ones still owed first, so the claim is released within one sweep of writes
working again. Each cleanup is a conditional write keyed by its own claim, so
running it after the sweeper or another worker got there first changes nothing.

What is owed lives in the worker's memory only: a worker that stops with
cleanups owed leaves them to the lease and any worker's sweep, as a worker that
dies mid-turn does. The list is bounded for the same reason.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable

from symfonic.core.contracts.errors import StoreUnavailable

logger = logging.getLogger(__name__)

# Past this many, the oldest owed cleanup is left to its lease and the sweeper.
MOST_OWED = 10_000

Cleanup = Callable[[], Awaitable[object]]


class OwedWrites:
    """Cleanups keyed by what they clean up, in the order they fell due."""

    def __init__(self, most: int = MOST_OWED) -> None:
        self._owed: OrderedDict[Hashable, Cleanup] = OrderedDict()
        self._most = most

    def __len__(self) -> int:
        return len(self._owed)

    def owe(self, key: Hashable, cleanup: Cleanup) -> None:
        """Keep ``cleanup`` until :meth:`settle` writes it; the newest for a key wins."""
        self._owed[key] = cleanup
        self._owed.move_to_end(key)
        while len(self._owed) > self._most:
            self._owed.popitem(last=False)

    async def settle(self) -> int:
        """Run the owed cleanups in order, until one finds the store still unable.

        Returns how many were written; the rest stay owed for the next call.
        """
        written = 0
        for key, cleanup in list(self._owed.items()):
            try:
                await cleanup()
            except StoreUnavailable as error:
                logger.debug("owed cleanups wait for the store: %s", error)
                break
            if self._owed.get(key) is cleanup:
                del self._owed[key]
            written += 1
        if written:
            logger.info("wrote %d cleanups owed since the store could not write", written)
        return written
