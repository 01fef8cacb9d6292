"""A principal's pauses, a page at a time, and how many there are: keyset pages over a union of
one indexed range per way of being allowed (docs/storage.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from symfonic.core.contracts.principal import WILDCARD
from symfonic.core.contracts.readdressing import kept_owner
from symfonic.core.contracts.store import PauseQuery, PauseRecord, PendingCount
from symfonic.core.contracts.types import InteractionKind, PauseState
from symfonic.storage.rows import PAUSE_COLUMNS, pause_of
from symfonic.storage.statements import Statement, first
from symfonic.storage.transactions import SqlTransactions

ORDER = "ORDER BY created_at, pause_id"
# Pending pauses per holder, agent and kind, kept by triggers (migration 0015).
TALLY = "symfonic_pending_tally"


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


@dataclass(frozen=True)
class _Range:
    """One way of being allowed: the principal's own unaddressed pauses (``own``),
    the pauses addressed to one scope (``scope``), or every pause (``everything``)."""

    way: str
    holder: str = ""


def _ways(query: PauseQuery) -> list[_Range]:
    """One range per way the principal may answer a pause, narrowed to ``query.audience``."""
    if WILDCARD in query.scopes:
        if query.audience is None:
            return [_Range("everything")]
        return [_Range("scope", query.audience)]
    ways = [] if query.audience is not None else [_Range("own", query.principal)]
    wanted = sorted(query.scopes) if query.audience is None else [query.audience]
    return ways + [_Range("scope", scope) for scope in wanted if scope in query.scopes]


def _holder(listing: _Listing, way: _Range, i: int) -> str:
    return listing.bind("principal" if way.way == "own" else f"scope_{i}", way.holder)


def _ranges(query: PauseQuery, listing: _Listing) -> None:
    """One branch per range, each a prefix of a listing index: read in order."""
    state = listing.bind("state", query.state.value)
    for i, way in enumerate(_ways(query)):
        branch = f"state = {state}"
        if way.way == "own":
            branch += f" AND audience IS NULL AND principal = {_holder(listing, way, i)}"
        elif way.way == "scope":
            branch += f" AND audience = {_holder(listing, way, i)}"
        listing.branches.append(branch)
    if WILDCARD not in query.scopes and query.audience is None:
        _kept(query, listing, state)


def _kept(query: PauseQuery, listing: _Listing, state: str) -> None:
    """The re-addressed pauses the principal kept, minus those the ranges above list.

    Read through the kept audiences' own table (one row per pause kept, few), so
    its other conditions are written as expressions no index of the pauses serves:
    a planner must not read a state's or a scope's range to apply them.
    """
    kept = [kept_owner(query.principal), *sorted(query.scopes)]
    names = ", ".join(listing.bind(f"kept_{i}", name) for i, name in enumerate(kept))
    # The owner's unaddressed pauses and the scopes' own are listed by their ranges.
    held = [listing.bind(f"held_{i}", s) for i, s in enumerate(sorted(query.scopes))]
    listed = ", ".join([*held, "''"])
    listing.branches.append(
        f"coalesce(state, state) = {state} AND pause_id IN (SELECT pause_id FROM"
        f" symfonic_pause_audiences WHERE audience IN ({names}))"
        f" AND coalesce(audience, '') NOT IN ({listed})"
    )


def _narrowing(query: PauseQuery, listing: _Listing) -> None:
    # A delegate's own pause is answered through its parent's, never listed.
    listing.common += ["parent_session_id IS NULL", *_filters(query, listing)]
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
    rows = await store.read_rows(Statement(text), listing.params, "list_pauses")
    return [pause_of(row) for row in rows]


async def count_pauses(store: SqlTransactions, query: PauseQuery) -> int:
    """How many pauses the query matches, whatever page it names."""
    tallied = _tallied(query)
    if tallied is None:
        return await count_rows(store, query)
    text, params = tallied
    row = first(await store.read_rows(Statement(text), params, "count_pauses"))
    return (0 if row is None else int(row["total"])) + await _count_kept(store, query)


async def _count_kept(store: SqlTransactions, query: PauseQuery) -> int:
    """The pauses the principal kept after they were re-addressed, which no tally holds."""
    if WILDCARD in query.scopes or query.audience is not None or query.agents == frozenset():
        return 0
    listing = _Listing()
    _kept(query, listing, listing.bind("state", query.state.value))
    _narrowing(query, listing)
    (where,) = listing.wheres()
    text = f"SELECT COUNT(*) AS total FROM symfonic_pauses WHERE {where}"
    row = first(await store.read_rows(Statement(text), listing.params, "count_pauses"))
    return 0 if row is None else int(row["total"])


async def count_rows(store: SqlTransactions, query: PauseQuery) -> int:
    """What `count_pauses` answers, counted one index entry per pause (any query)."""
    listing = _listing(query)
    if listing is None:
        return 0
    counts = [f"(SELECT COUNT(*) FROM symfonic_pauses WHERE {where})" for where in listing.wheres()]
    row = first(
        await store.read_rows(
            Statement(f"SELECT {' + '.join(counts)} AS total"), listing.params, "count_pauses"
        )
    )
    return 0 if row is None else int(row["total"])


def _tallied(query: PauseQuery) -> tuple[str, dict[str, Any]] | None:
    """The total as the tally's rows of the query's ranges less their pauses due but
    not swept; ``None`` when the tally cannot say (a text filter, another state)."""
    if query.state is not PauseState.PENDING or query.text:
        return None
    if query.agents is not None and not query.agents:
        return "SELECT 0 AS total", {}
    listing = _Listing()
    ways = _ways(query)
    filters = _filters(query, listing)
    sums = []
    for i, way in enumerate(ways):
        wheres = [*filters]
        if way.way != "everything":
            addressed = listing.bind(f"addressed_{i}", way.way == "scope")
            wheres += [f"addressed = {addressed}", f"holder = {_holder(listing, way, i)}"]
        where = f" WHERE {' AND '.join(wheres)}" if wheres else ""
        sums.append(f"(SELECT COALESCE(SUM(pending), 0) FROM {TALLY}{where})")
    total = " + ".join(sums) or "0"
    if query.unexpired_at is not None and ways:
        total = f"({total}) - ({_due(query, listing, ways, filters)})"
    return f"SELECT {total} AS total", listing.params


def _filters(query: PauseQuery, listing: _Listing) -> list[str]:
    """The agents and kind, as conditions both the tally and the pauses can take."""
    filters = []
    if query.agents is not None:
        names = [listing.bind(f"agent_{i}", a) for i, a in enumerate(sorted(query.agents))]
        filters.append(f"agent IN ({', '.join(names)})")
    if query.kind is not None:
        filters.append(f"kind = {listing.bind('kind', query.kind.value)}")
    return filters


def _due(query: PauseQuery, listing: _Listing, ways: list[_Range], filters: list[str]) -> str:
    """A count of the ranges' pending pauses past ``unexpired_at``: still in the
    tally until the sweep moves them, but no longer listed.

    Only the sweep's index on ``(state, expires_at)`` may serve it, so it reads
    the pauses due and never a whole range: each range is an expression no
    index holds (a listing index would match ``state`` and the holder exactly,
    and SQLite without statistics would prefer it).
    """
    ranges: list[str] = []
    for i, way in enumerate(ways):
        if way.way == "everything":
            ranges = []
            break
        holder = _holder(listing, way, i)
        if way.way == "own":
            ranges.append(f"CASE WHEN audience IS NULL THEN principal END = {holder}")
        else:
            ranges.append(f"coalesce(audience, audience) = {holder}")
    state = listing.bind("state", query.state.value)
    due = listing.bind("unexpired_at", query.unexpired_at)
    wheres = [f"state = {state}", f"expires_at <= {due}", "parent_session_id IS NULL", *filters]
    if ranges:
        wheres.append(f"({' OR '.join(ranges)})")
    return f"SELECT COUNT(*) FROM symfonic_pauses WHERE {' AND '.join(wheres)}"


PENDING_BY_AGENT_AND_KIND = Statement(
    f"SELECT agent, kind, SUM(pending) AS total FROM {TALLY}"
    " GROUP BY agent, kind HAVING SUM(pending) > 0"
)


async def count_pending(store: SqlTransactions) -> list[PendingCount]:
    """The pending pauses a person may answer, by agent and kind, in one statement."""
    rows = await store.read_rows(PENDING_BY_AGENT_AND_KIND, {}, "count_pending")
    return [
        PendingCount(row["agent"], InteractionKind(row["kind"]), int(row["total"])) for row in rows
    ]
