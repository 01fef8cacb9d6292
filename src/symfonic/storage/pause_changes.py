"""Reading the record of pause changes that the database's triggers write.

On PostgreSQL a replay also returns the changes that may have been uncommitted at its
position, so a reader may see a change twice but never misses one.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from datetime import timedelta
from typing import ClassVar, TypeVar

import anyio

from symfonic.core.contracts.pause_changes import PauseChange
from symfonic.core.contracts.readdressing import ReaddressKind
from symfonic.core.contracts.types import PauseState
from symfonic.storage.rows import PAUSE_COLUMNS, aware, pause_of
from symfonic.storage.statements import Row, Statement, first
from symfonic.storage.transactions import SqlTransactions

_COLUMNS = "e.id AS change_id, e.state AS change_state, e.at AS change_at, " + ", ".join(
    "p." + column.strip() for column in PAUSE_COLUMNS.split(",")
)
_JOINED = (
    f"SELECT {_COLUMNS} FROM symfonic_pause_events e JOIN symfonic_pauses p"
    " ON p.pause_id = e.pause_id"
)

# Two subqueries, not min() and max() side by side: each is then one index probe.
BOUNDS = Statement(
    "SELECT (SELECT max(id) FROM symfonic_pause_events) AS newest,"
    " (SELECT min(id) FROM symfonic_pause_events) AS oldest"
)
BETWEEN = Statement(f"{_JOINED} WHERE e.id > :after AND e.id <= :upto ORDER BY e.id LIMIT :limit")
# Changes a watch reads and hands on at once: a burst (a sweep expiring 10k
# pauses) reaches the feed as many short batches, each read and turned into
# records where the adapter keeps long work (``read_converted``).
WATCH_BATCH = 500
AFTER = Statement(f"{_JOINED} WHERE e.id > :after ORDER BY e.id LIMIT :limit")
AFTER_WITH_IN_FLIGHT = Statement(
    f"{_JOINED} WHERE e.id > :after OR e.at >= :since ORDER BY e.id LIMIT :limit"
)
RECORDED_AT = Statement(
    "SELECT at FROM symfonic_pause_events WHERE id <= :position ORDER BY id DESC LIMIT 1"
)


T = TypeVar("T")
_READDRESSED = {kind.value: kind for kind in ReaddressKind}
# The state a counted approval is recorded with (`symfonic.storage.approval_votes`).
APPROVED = "approved"


def change_of(row: Row) -> PauseChange:
    """One change; a re-addressing (`symfonic.storage.readdressing`) or a counted
    approval (`symfonic.storage.approval_votes`) left the pause pending, and its
    row's state names that instead."""
    at = aware(row["change_at"])
    assert at is not None
    readdressed = _READDRESSED.get(row["change_state"])
    approved = row["change_state"] == APPROVED
    return PauseChange(
        position=int(row["change_id"]),
        state=PauseState.PENDING if readdressed or approved else PauseState(row["change_state"]),
        at=at,
        pause=pause_of(row),
        readdressed=readdressed,
        approved=approved,
    )


def _changes(rows: Sequence[Row]) -> list[PauseChange]:
    return [change_of(row) for row in rows]


class PauseChangeRecord(SqlTransactions):
    """The port's reads of the change record, in SQL both databases accept."""

    # How long a change may stay uncommitted after taking its position (0: never).
    IN_FLIGHT_SECONDS: ClassVar[float] = 0.0
    POLL_SECONDS: ClassVar[float] = 0.2

    async def _bounds(self) -> tuple[int, int | None]:
        row = first(await self.read_rows(BOUNDS, {}, "pause_change_position"))
        assert row is not None  # an aggregate always returns its one row
        newest, oldest = row["newest"], row["oldest"]
        return (0 if newest is None else int(newest)), (None if oldest is None else int(oldest))

    async def pause_change_position(self) -> int:
        return (await self._bounds())[0]

    async def pause_changes_since(self, position: int, *, limit: int) -> list[PauseChange] | None:
        newest, oldest = await self._bounds()
        behind = oldest is not None and position < oldest - 1
        if position < 0 or position > newest or behind:
            return None
        if self.IN_FLIGHT_SECONDS > 0:
            recorded = first(
                await self.read_rows(RECORDED_AT, {"position": position}, "pause_changes_since")
            )
        else:
            recorded = None
        read: Statement = AFTER
        params: dict[str, object] = {"after": position, "limit": limit + 1}
        if recorded is not None:
            since = aware(recorded["at"])
            assert since is not None
            read = AFTER_WITH_IN_FLIGHT
            params["since"] = since - timedelta(seconds=self.IN_FLIGHT_SECONDS)
        changes = await self.read_converted(read, params, _changes, "pause_changes_since")
        return None if len(changes) > limit else changes

    async def pause_changes_at(self, positions: Sequence[int]) -> list[PauseChange]:
        """The changes at these positions, in the order given (a notification's order)."""
        if not positions:
            return []
        names = {f"p{index}": position for index, position in enumerate(positions)}
        listed = ", ".join(f":{name}" for name in names)
        read = Statement(f"{_JOINED} WHERE e.id IN ({listed})")
        found = {
            change.position: change
            for change in await self.read_converted(read, names, _changes, "pause_changes_at")
        }
        return [found[position] for position in dict.fromkeys(positions) if position in found]

    async def _changes_between(self, after: int, upto: int) -> tuple[list[PauseChange], int]:
        params = {"after": after, "upto": upto, "limit": WATCH_BATCH}
        changes = await self.read_converted(BETWEEN, params, _changes, "watch_pause_changes")
        # A short batch is the last: the changes it lacks lost their pause.
        return changes, changes[-1].position if len(changes) == WATCH_BATCH else upto

    def watch_pause_changes(self) -> AsyncGenerator[list[PauseChange], None]:
        """Poll for changes committed after the watch began; see the module's docstring."""
        return polled(self.pause_change_position, self._changes_between, self.POLL_SECONDS)


async def polled(
    newest: Callable[[], Awaitable[int]],
    between: Callable[[int, int], Awaitable[tuple[list[T], int]]],
    every: float,
) -> AsyncGenerator[list[T], None]:
    """A watch of a record whose positions commit in order (SQLite's), by polling.

    ``newest`` reads the largest position, every ``every`` seconds; when it
    moved, ``between(seen, newest)`` reads a batch after ``seen`` and says how
    far it got. The first batch is empty: the watch is established.
    """
    seen = await newest()
    yield []
    while True:
        await anyio.sleep(every)
        upto = await newest()
        while seen < upto:
            batch, seen = await between(seen, upto)
            if batch:
                yield batch
