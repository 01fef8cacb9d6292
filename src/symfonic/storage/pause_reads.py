"""Reading pauses, one statement each.

A read never decides anything another worker could race for; a decision is always a
conditional write.
"""

from __future__ import annotations

from symfonic.core.contracts.pauses import CheckpointRecord, PauseRecord
from symfonic.storage import pause_listing
from symfonic.storage.rows import CHECKPOINT_COLUMNS, PAUSE_COLUMNS, checkpoint_of, pause_of
from symfonic.storage.statements import Params, Statement, first
from symfonic.storage.transactions import SqlTransactions

GET_PAUSE = Statement(f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses WHERE pause_id = :pause_id")
LOAD_CHECKPOINT = Statement(
    f"SELECT {CHECKPOINT_COLUMNS} FROM symfonic_pauses WHERE pause_id = :pause_id"
)
CLAIMED_PAUSE = Statement(
    f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses"
    " WHERE session_id = :session_id AND claim_id = :claim_id"
)
OPEN_PAUSE = Statement(
    f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses"
    " WHERE session_id = :session_id AND state IN ('pending', 'claimed')"
    " ORDER BY created_at DESC LIMIT 1"
)
SESSION_PAUSES = Statement(
    f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses"
    " WHERE session_id = :session_id ORDER BY created_at"
)


async def _one(
    store: SqlTransactions, statement: Statement, params: Params, operation: str
) -> PauseRecord | None:
    row = first(await store.read_rows(statement, params, operation))
    return None if row is None else pause_of(row)


async def _all(
    store: SqlTransactions, statement: Statement, params: Params, operation: str
) -> list[PauseRecord]:
    return [pause_of(row) for row in await store.read_rows(statement, params, operation)]


class SqlPauseReads(SqlTransactions):
    """The reads of the port's `PauseStore`."""

    async def get_pause(self, pause_id: str) -> PauseRecord | None:
        return await _one(self, GET_PAUSE, {"pause_id": pause_id}, "get_pause")

    async def load_checkpoint(self, pause_id: str) -> CheckpointRecord | None:
        row = first(
            await self.read_rows(LOAD_CHECKPOINT, {"pause_id": pause_id}, "load_checkpoint")
        )
        return None if row is None else checkpoint_of(row)

    async def claimed_pause(self, session_id: str, claim_id: str) -> PauseRecord | None:
        return await _one(
            self, CLAIMED_PAUSE, {"session_id": session_id, "claim_id": claim_id}, "claimed_pause"
        )

    async def open_pause(self, session_id: str) -> PauseRecord | None:
        return await _one(self, OPEN_PAUSE, {"session_id": session_id}, "open_pause")

    async def session_pauses(self, session_id: str) -> list[PauseRecord]:
        return await _all(self, SESSION_PAUSES, {"session_id": session_id}, "session_pauses")


class SqlPauseListing(SqlTransactions):
    """The port's `PauseListing`: its
    queries are written once, in `symfonic.storage.pause_listing`."""

    list_pauses = pause_listing.list_pauses
    count_pauses = pause_listing.count_pauses
    count_pending = pause_listing.count_pending
