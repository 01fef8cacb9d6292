"""The audit trail in SQL: appends through the intake, reads, and pruning with an anchor.

The database writes and chains the records itself (migration 0015): a pause's
change inserts into ``symfonic_audit_intake`` from a trigger, and so does
:func:`append` for a change audited from code, inside the caller's own
transaction, so the record commits or rolls back with the change. The intake's
trigger takes the chain's head row first (on PostgreSQL an ``UPDATE`` that
holds its lock to commit; on SQLite the write lock), which is why two workers
appending at once never fork the chain.

SQLite has no SHA-256: every connection the store opens registers
``symfonic_audit_hash`` (:func:`register_audit_hash`), which the trigger calls
on the record's JSON. A connection without it cannot change a pause's state.

Pruning deletes a prefix of the chain and keeps the last deleted record's
sequence and hash as the anchor, in the same transaction, so verification
still starts from a hash it can trust.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import asdict, fields

import rfc8785

from symfonic.core.contracts.audit import AuditAnchor, AuditEntry, AuditRecord, hashed_fields
from symfonic.storage.statements import Row, Statement, first
from symfonic.storage.transactions import Connection, SqlTransactions

HASH_FUNCTION = "symfonic_audit_hash"
_RECORD_COLUMNS = ", ".join(f.name for f in fields(AuditRecord))
_ENTRY_COLUMNS = tuple(f.name for f in fields(AuditEntry))

APPEND = Statement(
    f"INSERT INTO symfonic_audit_intake ({', '.join(_ENTRY_COLUMNS)})"
    f" VALUES ({', '.join(':' + c for c in _ENTRY_COLUMNS)})"
)
HEAD_RECORD = Statement(
    f"SELECT {_RECORD_COLUMNS} FROM symfonic_audit"
    " WHERE sequence = (SELECT sequence FROM symfonic_audit_head WHERE id = 1)"
)
RECORDS = Statement(
    f"SELECT {_RECORD_COLUMNS} FROM symfonic_audit WHERE sequence > :after"
    " AND (CAST(:since AS TEXT) IS NULL OR at >= :since) ORDER BY sequence LIMIT :limit"
)
ANCHOR = Statement(
    "SELECT sequence, hash, anchor_sequence, anchor_hash FROM symfonic_audit_head WHERE id = 1"
)
LAST_BEFORE = Statement(
    "SELECT sequence, hash FROM symfonic_audit WHERE at < :before ORDER BY sequence DESC LIMIT 1"
)
MOVE_ANCHOR = Statement(
    "UPDATE symfonic_audit_head SET anchor_sequence = :sequence, anchor_hash = :hash"
    " WHERE id = 1 AND anchor_sequence < :sequence"
)
DELETE_THROUGH = Statement("DELETE FROM symfonic_audit WHERE sequence <= :sequence")


def _hash_record(record_json: str) -> str:
    return hashlib.sha256(rfc8785.dumps(hashed_fields(json.loads(record_json)))).hexdigest()


def register_audit_hash(connection: sqlite3.Connection) -> None:
    """Give a SQLite connection the hash the audit trigger computes each record's with."""
    connection.create_function(HASH_FUNCTION, 1, _hash_record, deterministic=True)


def record_of(row: Row) -> AuditRecord:
    values = {f.name: row[f.name] for f in fields(AuditRecord)}
    values["sequence"] = int(values["sequence"])
    return AuditRecord(**values)


async def append(connection: Connection, entry: AuditEntry) -> None:
    """Append ``entry`` inside the caller's transaction, which it commits or rolls back with."""
    await connection.count(APPEND, asdict(entry))


class SqlAuditLog(SqlTransactions):
    """The :class:`~symfonic.core.contracts.audit.AuditLog` role in SQL."""

    async def append_audit(self, entry: AuditEntry) -> AuditRecord:
        async def append_then_read(connection: Connection) -> AuditRecord:
            await append(connection, entry)
            (row,) = await connection.rows(HEAD_RECORD, {})
            return record_of(row)

        return await self.transaction(append_then_read)

    async def audit_records(
        self, *, after: int = 0, limit: int = 100, since: str | None = None
    ) -> list[AuditRecord]:
        params = {"after": after, "limit": limit, "since": since}
        return await self.read_converted(RECORDS, params, _records)

    async def audit_anchor(self) -> AuditAnchor:
        (row,) = await self.read_rows(ANCHOR, {})
        return AuditAnchor(
            anchor_sequence=int(row["anchor_sequence"]),
            anchor_hash=row["anchor_hash"],
            head_sequence=int(row["sequence"]),
            head_hash=row["hash"],
        )

    async def prune_audit(self, before: str) -> int:
        async def prune(connection: Connection) -> int:
            last = first(await connection.rows(LAST_BEFORE, {"before": before}))
            if last is None:
                return 0
            kept = {"sequence": int(last["sequence"]), "hash": last["hash"]}
            await connection.count(MOVE_ANCHOR, kept)
            return await connection.count(DELETE_THROUGH, kept)

        return await self.background_transaction(prune)


def _records(rows: Sequence[Row]) -> list[AuditRecord]:
    return [record_of(row) for row in rows]
