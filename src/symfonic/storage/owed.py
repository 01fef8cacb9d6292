"""Cleanups the store could not write when they were due, kept until it can.

A failed turn leaves two things to clean up, each retried for a few seconds
while the store is briefly away:

- a resume's claim, abandoned
  (:meth:`~symfonic.storage.pause_writes.SqlPauseWrites.abandon_claim`);
  unwritten, the pause would stay ``claimed`` until its lease ran out;
- a first turn's run marker, cleared (:meth:`~symfonic.storage.runs.SqlRuns.end_run`);
  unwritten, the session would refuse turns until its run lease ran out, ten
  minutes by default, though the turn is long over. A marking whose reply was
  lost (:meth:`~symfonic.storage.runs.SqlRuns.begin_run`) is owed a clear too,
  since its statement may have committed.

When the store stays unable longer (a full disk, an outage), the cleanup is
kept here and every sweep writes the ones owed first, so after an outage of any
length each claim is released and each session takes turns again within one
sweep of writes working. A turn that failed owes ``turn.failed`` in the same
transaction as its cleanup.

Each cleanup is safe to run late and to run twice: it is one transaction whose
conditional write is keyed by its own claim or run id, so it changes nothing
once the sweeper, another worker or an earlier run got there first, nor a
marker a later turn has since set; and ``turn.failed`` is owed under a message
id of the turn's, so it is owed once however often the cleanup runs.

Why remember failed cleanups rather than rely on shorter leases: only the
worker that ran the turn knows it ended. A run lease short enough to free a
session within one sweep would cost every running turn a write every few
seconds, and would take the session from a live turn whose model streams
nothing for that long. What is owed lives in the worker's memory only: a worker
that stops with cleanups owed leaves them to their leases and any worker's
sweep, as a worker that dies mid-turn does. The list is bounded for the same
reason (``MOST_OWED``; a long outage under heavy traffic owes a clear for every
turn refused meanwhile): past it the oldest, whose lease ends soonest, is left
to its lease, and the log says so.
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
        """Keep ``cleanup`` until :meth:`settle` writes it; the newest for a key wins."""
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
