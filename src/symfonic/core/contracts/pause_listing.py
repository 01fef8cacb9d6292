"""The pauses a person may answer, a page at a time, in a total order (`created_at`, then
`pause_id`) so no page repeats or skips a pause.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from symfonic.core.contracts.pauses import PauseRecord
from symfonic.core.contracts.types import InteractionKind, PauseState


@dataclass(frozen=True, order=True)
class PausePosition:
    """Where a pause stands in a listing's order: by ``created_at``, then ``pause_id``.

    The order is total (ids are unique), so a page that starts after a position
    neither repeats nor skips a pause, however many are created meanwhile.
    """

    created_at: datetime
    pause_id: str

    @classmethod
    def of(cls, pause: PauseRecord) -> PausePosition:
        return cls(pause.created_at, pause.pause_id)


@dataclass(frozen=True)
class PauseQuery:
    """Pauses in ``state`` that ``principal`` (with ``scopes``) may answer, at most ``limit``.

    The optional fields narrow it: only pauses after ``after`` in the listing's
    order (a page's start; `PauseListing.count_pauses` ignores it), of one
    of ``agents``, of ``kind``, addressed to ``audience``, whose question
    contains ``text`` (ignoring case), or that expire after ``unexpired_at``.
    """

    state: PauseState
    principal: str
    scopes: frozenset[str]
    limit: int = 100
    after: PausePosition | None = None
    agents: frozenset[str] | None = None
    kind: InteractionKind | None = None
    audience: str | None = None
    text: str | None = None
    unexpired_at: datetime | None = None


@dataclass(frozen=True)
class PendingCount:
    """How many pending pauses one agent's turns made of one interaction kind."""

    agent: str
    kind: InteractionKind
    count: int


class PauseListing(Protocol):
    """The pauses a principal may answer: listed a page at a time, and counted."""

    async def list_pauses(self, query: PauseQuery) -> list[PauseRecord]:
        """The pauses the query's principal may answer, oldest first (by
        `PausePosition`), starting after ``query.after``, at most ``query.limit``."""
        ...

    async def count_pauses(self, query: PauseQuery) -> int:
        """How many pauses `list_pauses` would give with no ``after`` and no limit."""
        ...

    async def count_pending(self) -> list[PendingCount]:
        """Every pending pause a person may answer (a delegate's own is answered through
        its parent's, as in `list_pauses`), counted by agent and kind in one read."""
        ...
