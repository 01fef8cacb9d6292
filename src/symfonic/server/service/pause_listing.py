"""What a principal may answer, a page at a time, for the API and the feed.

The hosted agents and the expiry are conditions of the store's query, so a page is full
and the total exact.
"""

from __future__ import annotations

from dataclasses import dataclass

from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import PausePosition, PauseQuery, PauseRecord
from symfonic.core.contracts.types import InteractionKind, PauseState
from symfonic.server.service.host import ServiceHost

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


@dataclass(frozen=True)
class PauseFilters:
    """Which pauses to list: their state, and optionally agent, kind, audience and text."""

    state: PauseState = PauseState.PENDING
    agent: str | None = None
    kind: InteractionKind | None = None
    audience: str | None = None
    text: str | None = None


@dataclass(frozen=True)
class PausePage:
    """One page, how many pauses match in all, and where the next page starts
    (``None`` on the last page)."""

    pauses: list[PauseRecord]
    total: int
    next: PausePosition | None


async def pause_page(
    host: ServiceHost,
    principal: Principal,
    filters: PauseFilters = PauseFilters(),
    *,
    limit: int = DEFAULT_LIMIT,
    after: PausePosition | None = None,
) -> PausePage:
    """The page of ``filters``' pauses ``principal`` may answer that starts after ``after``."""
    hosted = frozenset(host.agents)
    agents = hosted if filters.agent is None else hosted & {filters.agent}
    pending = filters.state is PauseState.PENDING
    query = PauseQuery(
        filters.state,
        principal.name,
        principal.scopes,
        # One more than the page: whether it exists says whether there is a next page.
        limit=limit + 1,
        after=after,
        agents=agents,
        kind=filters.kind,
        audience=filters.audience,
        text=filters.text,
        unexpired_at=host.agent(None).clock() if pending else None,
    )
    pauses = await host.store.list_pauses(query)
    total = await host.store.count_pauses(query)
    page = pauses[:limit]
    more = len(pauses) > limit and bool(page)
    return PausePage(page, total, PausePosition.of(page[-1]) if more else None)
