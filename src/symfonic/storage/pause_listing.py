"""A principal's pauses, a page at a time, and how many there are in all.

A listing is ordered by ``(created_at, pause_id)`` and a page starts strictly
after the last position the caller saw (keyset pagination): a page costs the
rows it returns, never the rows before it, and a pause created meanwhile never
shifts one already listed onto another page.

Who may answer what is a union of ranges, one per way of being allowed: the
principal's own unaddressed pauses, and one range per scope it holds. Each
range is ``state``, then ``principal`` or ``audience``, then ``created_at``,
which an index on ``(state, principal | audience, created_at)`` serves in
order, so each branch reads at most one page of rows; a single ``WHERE`` with
an ``OR`` of them would read every match to sort it. The ``*`` scope is one
range over the whole state.

A total counts every pause of its ranges, filtered on the agents, kind, expiry
and delegate flag; the same indexes carry those columns, so the count reads
index entries and never the rows (still one entry per pause in the ranges).

The pending gauge's count is one grouped read of every pending pause: the
store counts them, so the service never holds them to count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from symfonic.core.contracts.principal import WILDCARD
from symfonic.core.contracts.store import PauseQuery, PauseRecord, PendingCount
from symfonic.core.contracts.types import InteractionKind, PauseState
from symfonic.storage.rows import PAUSE_COLUMNS, pause_of
from symfonic.storage.statements import Statement, first
from symfonic.storage.transactions import SqlTransactions

ORDER = "ORDER BY created_at, pause_id"


@dataclass
class _Listing:
    """One query's branches (each a ``WHERE`` over its own range) and shared conditions."""

    branches: list[str] = field(default_factory=list)
    common: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def bind(self, name: str, value: Any) -> str:
        self.params[name] = value
        return f":{name}"

    def wheres(self) -> list[str]:
        return [" AND ".join([branch, *self.common]) for branch in self.branches]


def _like(text: str) -> str:
    """``text`` as a ``LIKE`` pattern matching it anywhere, its wildcards taken literally."""
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _ranges(query: PauseQuery, listing: _Listing) -> None:
    """One branch per way the principal may answer a pause, narrowed to ``query.audience``."""
    state = listing.bind("state", query.state.value)
    if WILDCARD in query.scopes:
        branch = f"state = {state}"
        if query.audience is not None:
            branch += f" AND audience = {listing.bind('audience', query.audience)}"
        listing.branches.append(branch)
        return
    if query.audience is None:
        principal = listing.bind("principal", query.principal)
        listing.branches.append(f"state = {state} AND audience IS NULL AND principal = {principal}")
    wanted = sorted(query.scopes) if query.audience is None else [query.audience]
    for i, scope in enumerate(s for s in wanted if s in query.scopes):
        listing.branches.append(
            f"state = {state} AND audience = {listing.bind(f'scope_{i}', scope)}"
        )


def _narrowing(query: PauseQuery, listing: _Listing) -> None:
    # A delegate's own pause is answered through its parent's, never listed.
    listing.common.append("parent_session_id IS NULL")
    if query.agents is not None:
        names = [listing.bind(f"agent_{i}", a) for i, a in enumerate(sorted(query.agents))]
        listing.common.append(f"agent IN ({', '.join(names)})")
    if query.kind is not None:
        listing.common.append(f"kind = {listing.bind('kind', query.kind.value)}")
    if query.text:
        pattern = listing.bind("pattern", _like(query.text))
        listing.common.append(f"lower(query) LIKE {pattern} ESCAPE '\\'")
    if query.unexpired_at is not None:
        # An expression, not the bare column: SQLite would take ``state = ? AND
        # expires_at > ?`` to the sweep's index on (state, expires_at), every
        # pending pause, rather than the range's own (tests/storage/test_query_plans.py).
        unexpired = listing.bind("unexpired_at", query.unexpired_at)
        listing.common.append(f"coalesce(expires_at, expires_at) > {unexpired}")


def _listing(query: PauseQuery) -> _Listing | None:
    """The query as branches and conditions; ``None`` when it can match nothing."""
    if query.agents is not None and not query.agents:
        return None
    listing = _Listing()
    _ranges(query, listing)
    _narrowing(query, listing)
    return listing if listing.branches else None


def _after(query: PauseQuery, listing: _Listing) -> None:
    if query.after is None:
        return
    at = listing.bind("after_at", query.after.created_at)
    pause_id = listing.bind("after_id", query.after.pause_id)
    # The first conjunct is a plain range an index can start at; the second
    # steps past the pauses created at that very instant that were already seen.
    listing.common.append(f"created_at >= {at} AND (created_at > {at} OR pause_id > {pause_id})")


async def list_pauses(store: SqlTransactions, query: PauseQuery) -> list[PauseRecord]:
    """A page of the pauses the query's principal may answer, in listing order."""
    listing = _listing(query)
    if listing is None or query.limit <= 0:
        return []
    _after(query, listing)
    limit = listing.bind("limit", query.limit)
    ranged = [
        f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses WHERE {where} {ORDER} LIMIT {limit}"
        for where in listing.wheres()
    ]
    if len(ranged) == 1:
        text = ranged[0]
    else:
        union = " UNION ALL ".join(
            f"SELECT * FROM ({branch}) AS range_{i}" for i, branch in enumerate(ranged)
        )
        text = f"SELECT * FROM ({union}) AS page {ORDER} LIMIT {limit}"
    rows = await store.read_rows(Statement(text), listing.params)
    return [pause_of(row) for row in rows]


async def count_pauses(store: SqlTransactions, query: PauseQuery) -> int:
    """How many pauses the query matches, whatever page it names."""
    listing = _listing(query)
    if listing is None:
        return 0
    counts = [f"(SELECT COUNT(*) FROM symfonic_pauses WHERE {where})" for where in listing.wheres()]
    row = first(
        await store.read_rows(Statement(f"SELECT {' + '.join(counts)} AS total"), listing.params)
    )
    return 0 if row is None else int(row["total"])


PENDING_BY_AGENT_AND_KIND = Statement(
    "SELECT agent, kind, COUNT(*) AS total FROM symfonic_pauses"
    " WHERE state = :state AND parent_session_id IS NULL GROUP BY agent, kind"
)


async def count_pending(store: SqlTransactions) -> list[PendingCount]:
    """The pending pauses a person may answer, by agent and kind, in one statement."""
    rows = await store.read_rows(PENDING_BY_AGENT_AND_KIND, {"state": PauseState.PENDING.value})
    return [
        PendingCount(row["agent"], InteractionKind(row["kind"]), int(row["total"])) for row in rows
    ]
