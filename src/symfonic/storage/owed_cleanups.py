"""Cleanups the store could not write when they were due, kept until a sweep can.

Each is one conditional transaction keyed by its claim or run id, so running it late or
twice changes nothing more; the list is bounded (`MOST_OWED`).
"""

from __future__ import annotations

import logging
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable
from enum import Enum

from symfonic.core.contracts.errors import StoreUnavailable

logger = logging.getLogger(__name__)

# Cleanups owed at most; each costs a few hundred bytes.
MOST_OWED = 10_000

# A cleanup returns how many rows it changed (none when it was already done).
Cleanup = Callable[[], Awaitable[int]]


class Kind(Enum):
    """What an owed cleanup does, in words, and the lease that ends it otherwise."""

    ABANDON = ("the abandon of claim", "claim lease")
    END_RUN = ("the clear of the run marker of turn", "run lease")

    def __init__(self, words: str, lease: str) -> None:
        self.words = words
        self.lease = lease


# A cleanup is keyed by its kind, its session, and its own claim or run id.
Key = tuple[Kind, str, str]


class OwedWrites:
    """Cleanups keyed by what they clean up, in the order they fell due."""

    def __init__(self) -> None:
        self._owed: OrderedDict[Key, Cleanup] = OrderedDict()

    def __len__(self) -> int:
        return len(self._owed)

    def owe(self, kind: Kind, session_id: str, of: str, cleanup: Cleanup) -> None:
        """Keep ``cleanup`` until `settle` writes it; the newest for a key wins."""
        key = (kind, session_id, of)
        self._owed[key] = cleanup
        self._owed.move_to_end(key)
        while len(self._owed) > MOST_OWED:
            (oldest, dropped, dropped_of), _ = self._owed.popitem(last=False)
            logger.warning(
                "%d cleanups already wait for the store to write them; %s %s of session %s "
                "is left to its %s",
                MOST_OWED,
                oldest.words,
                dropped_of,
                dropped,
                oldest.lease,
            )

    async def settle(self) -> Counter[Kind]:
        """Run the owed cleanups in order; how many rows each kind changed.

        The first that finds the store still unable stops the rest, which stay
        owed, and its error propagates: the sweep fails, and the next one tries
        again.
        """
        changed: Counter[Kind] = Counter()
        written = 0
        for key, cleanup in list(self._owed.items()):
            try:
                changed[key[0]] += await cleanup()
            except StoreUnavailable:
                if written:
                    logger.info("wrote %d of the cleanups owed before the store failed", written)
                raise
            if self._owed.get(key) is cleanup:
                del self._owed[key]
            written += 1
        if written:
            logger.info("wrote %d cleanups owed since the store could not write", written)
        return changed
