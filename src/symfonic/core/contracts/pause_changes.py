"""The record of pause changes: the storage role the live feed reads.

Every change is recorded in its own transaction at a growing position; a watcher may see
a change twice, never miss one.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from symfonic.core.contracts.pauses import PauseRecord
from symfonic.core.contracts.readdressing import ReaddressKind
from symfonic.core.contracts.types import PauseState


@dataclass(frozen=True)
class PauseChange:
    """A pause created or moved to another state, as the store recorded it.

    ``position`` grows with every change the store records (the live feed's
    position); ``state`` is the state the pause moved to, ``at`` when. ``pause``
    is the pause's row as it is when the change is read, so a reader can decide
    who may see it exactly as `PauseListing.list_pauses` does.
    """

    position: int
    state: PauseState
    at: datetime
    pause: PauseRecord
    readdressed: ReaddressKind | None = None
    """Set when the change re-addressed a pending pause rather than moved its state."""
    approved: bool = False
    """Set when the change counted an approval of a pause that needs several; it
    stays pending, and its row says where the vote stands."""


class PauseChangeLog(Protocol):
    """The recorded changes of pauses: replayed from a position, or watched live."""

    async def pause_change_position(self) -> int:
        """The newest recorded change's position; 0 before the first."""
        ...

    async def pause_changes_since(self, position: int, *, limit: int) -> list[PauseChange] | None:
        """The changes after ``position``, oldest first; ``None`` if they cannot be replayed.

        Where changes can commit out of position order (PostgreSQL), the list
        begins with the few changes at or before ``position`` that may still
        have been uncommitted when it was handed out: a reader may see a change
        twice, in order, never miss one.

        ``None`` when ``position`` is not one this store handed out (ahead of
        its newest, or behind changes retention already deleted), or when more
        than ``limit`` changes followed it: the reader starts from the current
        pauses instead.
        """
        ...

    def watch_pause_changes(self) -> AsyncGenerator[list[PauseChange], None]:
        """Every change committed from now on, in batches, in commit order, until closed.

        The first batch may be empty: it says the watch is established, and
        every change committed after it arrived is in a later batch. Raises
        ``StoreUnavailable`` when the watch is lost (changes may then have been
        missed); close it with ``aclose``.
        """
        ...
