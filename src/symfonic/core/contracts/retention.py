"""Retention: the storage role that deletes finished sessions, a bounded batch per transaction,
never one with a pause or a turn still open.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class PruneBatch:
    """One batch of retention: up to ``batch`` finished sessions idle since ``cutoff``."""

    cutoff: datetime
    now: datetime
    batch: int
    keep_answered: bool


@dataclass(frozen=True)
class PruneReport:
    """What one batch of retention deleted: sessions, and their messages and pauses."""

    sessions: int
    messages: int
    pauses: int


class RetentionStore(Protocol):
    """Deleting finished sessions, one batch at a time."""

    async def prune(self, batch: PruneBatch) -> PruneReport:
        """Delete one batch of finished sessions idle since before the cutoff.

        One transaction. A session with a pause pending or claimed, or a first
        turn running, is never deleted; see `symfonic.storage.retention`.
        """
        ...
