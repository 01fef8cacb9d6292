"""The audit trail in SQL: records appended unsealed in the change's transaction, sealed later.

A record is inserted with a negative `sequence` (migration 0024); a seal gives it its place,
`prev_hash` and `hash` under the head row's lock, so no change's transaction waits on the head.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import asdict, fields

import rfc8785

from symfonic.core.contracts.audit import AuditAnchor, AuditEntry, AuditRecord, hashed_fields
from symfonic.storage.statements import Dialect, Row, Statement, first
from symfonic.storage.transactions import Connection, SqlTransactions

HASH_FUNCTION = "symfonic_audit_hash"
# Records sealed a transaction: a backlog is sealed in several, none holding the head long.
SEAL_BATCH = 1000
_RECORD_COLUMNS = ", ".join(f.name for f in fields(AuditRecord))
_ENTRY_COLUMNS = tuple(f.name for f in fields(AuditEntry))
_HASHED = tuple(f.name for f in fields(AuditRecord) if f.name != "hash")

APPEND = Statement(
    f"INSERT INTO symfonic_audit_intake ({', '.join(_ENTRY_COLUMNS)})"
    f" VALUES ({', '.join(':' + c for c in _ENTRY_COLUMNS)})"
)
RECORDS = Statement(
    f"SELECT {_RECORD_COLUMNS} FROM symfonic_audit WHERE sequence > :after AND sequence > 0"
    " AND (CAST(:since AS TEXT) IS NULL OR at >= :since) ORDER BY sequence LIMIT :limit"
)
ANCHOR = Statement(
    "SELECT sequence, hash, anchor_sequence, anchor_hash,"
    " (SELECT count(*) FROM symfonic_audit WHERE sequence < 0) AS unsealed,"
    " (SELECT min(at) FROM symfonic_audit WHERE sequence < 0) AS unsealed_since"
    " FROM symfonic_audit_head WHERE id = 1"
)
# The head's lock is what makes two sealers take turns: SQLite's write lock, PostgreSQL's row lock.
SEALED_HEAD = {
    Dialect.SQLITE: Statement("SELECT sequence, hash FROM symfonic_audit_head WHERE id = 1"),
    Dialect.POSTGRESQL: Statement(
        "SELECT sequence, hash FROM symfonic_audit_head WHERE id = 1 FOR UPDATE"
    ),
}
# Unsealed numbers fall as records are written: the oldest is the one nearest zero.
UNSEALED = Statement(
    f"SELECT {_RECORD_COLUMNS} FROM symfonic_audit WHERE sequence < 0"
    " ORDER BY sequence DESC LIMIT :limit"
)
ANY_UNSEALED = Statement("SELECT sequence FROM symfonic_audit WHERE sequence < 0 LIMIT 1")
SEAL = Statement(
    "UPDATE symfonic_audit SET sequence = :sequence, prev_hash = :prev_hash, hash = :hash"
    " WHERE sequence = :unsealed"
)
MOVE_HEAD = Statement(
    "UPDATE symfonic_audit_head SET sequence = :sequence, hash = :hash WHERE id = 1"
)
LAST_BEFORE = Statement(
    "SELECT sequence, hash FROM symfonic_audit WHERE at < :before AND sequence > 0"
    " ORDER BY sequence DESC LIMIT 1"
)
MOVE_ANCHOR = Statement(
    "UPDATE symfonic_audit_head SET anchor_sequence = :sequence, anchor_hash = :hash"
    " WHERE id = 1 AND anchor_sequence < :sequence"
)
DELETE_THROUGH = Statement(
    "DELETE FROM symfonic_audit WHERE sequence > 0 AND sequence <= :sequence"
)


def _hash_record(record_json: str) -> str:
    return hashlib.sha256(rfc8785.dumps(hashed_fields(json.loads(record_json)))).hexdigest()


def register_audit_hash(connection: sqlite3.Connection) -> None:
    """Give a SQLite connection the hash the audit triggers of migrations 0015-0023 call."""
    connection.create_function(HASH_FUNCTION, 1, _hash_record, deterministic=True)


def _chained_hash(row: Row, sequence: int, prev_hash: str) -> str:
    """The hash of the record in ``row`` at its place. Its fields are text, nulls and one
    safe integer, for which sorted, unspaced, unescaped `json.dumps` writes RFC 8785's bytes
    at half `rfc8785`'s cost; `verify` recomputes every hash with `rfc8785` itself."""
    record = {name: row[name] for name in _HASHED}
    record["sequence"], record["prev_hash"] = sequence, prev_hash
    canonical = json.dumps(
        hashed_fields(record), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def record_of(row: Row) -> AuditRecord:
    values = {f.name: row[f.name] for f in fields(AuditRecord)}
    values["sequence"] = int(values["sequence"])
    return AuditRecord(**values)


async def append(connection: Connection, entry: AuditEntry) -> None:
    """Append ``entry`` inside the caller's transaction, which it commits or rolls back with."""
    await connection.count(APPEND, asdict(entry))


class SqlAuditLog(SqlTransactions):
    """The `AuditLog` role in SQL."""

    async def append_audit(self, entry: AuditEntry) -> None:
        async def append_one(connection: Connection) -> None:
            await append(connection, entry)

        await self.transaction(append_one, "append_audit")

    async def seal_audit(self) -> int:
        # An idle worker's seal reads one index entry and takes no lock.
        if not await self.read_rows(ANY_UNSEALED, {}, "seal_audit"):
            return 0
        sealed = 0
        while (batch := await self.background_transaction(self._seal_batch, "seal_audit")) > 0:
            sealed += batch
            if batch < SEAL_BATCH:
                break
        return sealed

    async def _seal_batch(self, connection: Connection) -> int:
        (head,) = await connection.rows(SEALED_HEAD[self.dialect], {})
        rows = await connection.rows(UNSEALED, {"limit": SEAL_BATCH})
        if not rows:
            return 0
        sequence, prev_hash = int(head["sequence"]), head["hash"]
        seals = []
        for row in rows:
            sequence += 1
            sealed = {"unsealed": row["sequence"], "sequence": sequence, "prev_hash": prev_hash}
            prev_hash = sealed["hash"] = _chained_hash(row, sequence, prev_hash)
            seals.append(sealed)
        await connection.each(SEAL, seals)
        await connection.count(MOVE_HEAD, {"sequence": sequence, "hash": prev_hash})
        return len(seals)

    async def audit_records(
        self, *, after: int = 0, limit: int = 100, since: str | None = None
    ) -> list[AuditRecord]:
        params = {"after": after, "limit": limit, "since": since}
        return await self.read_converted(RECORDS, params, _records, "audit_records")

    async def audit_anchor(self) -> AuditAnchor:
        (row,) = await self.read_rows(ANCHOR, {}, "audit_anchor")
        return AuditAnchor(
            anchor_sequence=int(row["anchor_sequence"]),
            anchor_hash=row["anchor_hash"],
            head_sequence=int(row["sequence"]),
            head_hash=row["hash"],
            unsealed=int(row["unsealed"]),
            unsealed_since=row["unsealed_since"],
        )

    async def prune_audit(self, before: str) -> int:
        async def prune(connection: Connection) -> int:
            last = first(await connection.rows(LAST_BEFORE, {"before": before}))
            if last is None:
                return 0
            kept = {"sequence": int(last["sequence"]), "hash": last["hash"]}
            await connection.count(MOVE_ANCHOR, kept)
            return await connection.count(DELETE_THROUGH, kept)

        return await self.background_transaction(prune, "prune_audit")


def _records(rows: Sequence[Row]) -> list[AuditRecord]:
    return [record_of(row) for row in rows]
