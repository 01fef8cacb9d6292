"""The audit trail in SQL: records appended unsealed in the change's transaction, sealed later.

A record keeps the negative number it was inserted with; a seal is one row of
`symfonic_audit_seals` that gives a batch its places and hashes under the head row's lock.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import asdict, fields
from typing import Any

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
# A JSON list of numbers, as a set SQL can test membership in.
_LISTED = {
    Dialect.SQLITE: "(SELECT value FROM json_each(:{}))",
    Dialect.POSTGRESQL: (
        "(SELECT CAST(value AS bigint) FROM json_array_elements_text(CAST(:{} AS json)))"
    ),
}

APPEND = Statement(
    f"INSERT INTO symfonic_audit_intake ({', '.join(_ENTRY_COLUMNS)})"
    f" VALUES ({', '.join(':' + c for c in _ENTRY_COLUMNS)})"
)
# Records sealed before seals were rows of their own hold their place in `sequence`.
RECORDS = Statement(
    f"SELECT {_RECORD_COLUMNS} FROM symfonic_audit WHERE sequence > :after AND sequence > 0"
    " AND (CAST(:since AS TEXT) IS NULL OR at >= :since) ORDER BY sequence LIMIT :limit"
)
SEALS = Statement(
    "SELECT sequence, prev_hash, records FROM symfonic_audit_seals WHERE sequence > :after"
    " ORDER BY sequence LIMIT 8"
)
LISTED = {
    d: Statement(
        f"SELECT {_RECORD_COLUMNS} FROM symfonic_audit WHERE sequence IN {s.format('numbers')}"
    )
    for d, s in _LISTED.items()
}
_NEW = "sequence < h.sealed_below"
ANCHOR = Statement(
    "SELECT sequence, hash, anchor_sequence, anchor_hash,"
    f" (SELECT count(*) FROM symfonic_audit WHERE {_NEW}) AS unsealed,"
    f" (SELECT min(at) FROM symfonic_audit WHERE {_NEW}) AS unsealed_since"
    " FROM symfonic_audit_head h WHERE id = 1"
)
# The head's lock is what makes two sealers take turns: SQLite's write lock, PostgreSQL's row
# lock. PostgreSQL's snapshot says which skipped numbers can no longer commit.
_HEAD = "SELECT sequence, hash, sealed_below, gaps"
SEALED_HEAD = {
    Dialect.SQLITE: Statement(f"{_HEAD}, 0 AS done FROM symfonic_audit_head WHERE id = 1"),
    Dialect.POSTGRESQL: Statement(
        f"{_HEAD}, CAST(pg_snapshot_xmin(pg_current_snapshot()) AS text) AS done"
        " FROM symfonic_audit_head WHERE id = 1 FOR UPDATE"
    ),
}
_ASKED = {
    Dialect.SQLITE: "0",
    Dialect.POSTGRESQL: "CAST(pg_snapshot_xmax(pg_current_snapshot()) AS text)",
}
# Unsealed numbers fall as records are written: the oldest is the one nearest zero. Both
# halves are index range scans; an OR of them would walk the sealed records too.
UNSEALED = {
    d: Statement(
        f"SELECT *, {_ASKED[d]} AS asked FROM (SELECT {_RECORD_COLUMNS} FROM symfonic_audit"
        f" WHERE sequence IN {s.format('gaps')} UNION ALL SELECT * FROM (SELECT"
        f" {_RECORD_COLUMNS} FROM symfonic_audit WHERE sequence < :below"
        " ORDER BY sequence DESC LIMIT :limit) AS new) AS unsealed"
        " ORDER BY sequence DESC LIMIT :limit"
    )
    for d, s in _LISTED.items()
}
ANY_UNSEALED = Statement(
    "SELECT 1 FROM symfonic_audit_head h WHERE id = 1 AND (gaps <> '{}' OR EXISTS"
    " (SELECT 1 FROM symfonic_audit WHERE sequence < h.sealed_below))"
)
# A record in the sealed range that neither a seal lists nor the head waits for. Each set is
# read once (no reference to the outer row), so the check is one pass over the records.
_HEAD_GAPS = "(SELECT gaps FROM symfonic_audit_head WHERE id = 1)"
_SEALED_NUMBERS = {
    Dialect.SQLITE: "SELECT json_extract(r.value, '$[0]') FROM symfonic_audit_seals s,"
    f" json_each(s.records) r UNION ALL SELECT CAST(key AS INTEGER) FROM json_each({_HEAD_GAPS})",
    Dialect.POSTGRESQL: "SELECT CAST(r ->> 0 AS bigint) FROM symfonic_audit_seals s,"
    " json_array_elements(CAST(s.records AS json)) r UNION ALL"
    f" SELECT CAST(k AS bigint) FROM json_object_keys(CAST({_HEAD_GAPS} AS json)) k",
}
STRAY = {
    d: Statement(
        "SELECT sequence FROM symfonic_audit WHERE sequence < 0 AND sequence >="
        f" (SELECT sealed_below FROM symfonic_audit_head WHERE id = 1) AND sequence NOT IN ({s})"
        " LIMIT 1"
    )
    for d, s in _SEALED_NUMBERS.items()
}
SEAL = Statement(
    "INSERT INTO symfonic_audit_seals (sequence, prev_hash, records, until)"
    " VALUES (:sequence, :prev_hash, :records, :until)"
)
MOVE_HEAD = Statement(
    "UPDATE symfonic_audit_head SET sequence = :sequence, hash = :hash,"
    " sealed_below = :below, gaps = :gaps WHERE id = 1"
)
LAST_BEFORE = Statement(
    "SELECT sequence, hash FROM symfonic_audit WHERE at < :before AND sequence > 0"
    " ORDER BY sequence DESC LIMIT 1"
)
# The seals a prune reaches: those stamped wholly before the time, and the first that is not.
PRUNED_SEALS = Statement(
    "SELECT sequence, records, until FROM symfonic_audit_seals WHERE sequence <= coalesce("
    "(SELECT min(sequence) FROM symfonic_audit_seals WHERE until >= :before),"
    " (SELECT max(sequence) FROM symfonic_audit_seals)) ORDER BY sequence"
)
MOVE_ANCHOR = Statement(
    "UPDATE symfonic_audit_head SET anchor_sequence = :sequence, anchor_hash = :hash"
    " WHERE id = 1 AND anchor_sequence < :sequence"
)
DELETE_THROUGH = Statement(
    "DELETE FROM symfonic_audit WHERE sequence > 0 AND sequence <= :sequence"
)
DELETE_SEALS = Statement("DELETE FROM symfonic_audit_seals WHERE sequence <= :sequence")
DELETE_LISTED = {
    d: Statement(f"DELETE FROM symfonic_audit WHERE sequence IN {s.format('numbers')}")
    for d, s in _LISTED.items()
}


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


def record_of(row: Row, **place: object) -> AuditRecord:
    values = {f.name: row[f.name] for f in fields(AuditRecord)} | place
    values["sequence"] = int(values["sequence"])
    return AuditRecord(**values)


async def append(connection: Connection, entry: AuditEntry) -> None:
    """Append ``entry`` inside the caller's transaction, which it commits or rolls back with."""
    await connection.count(APPEND, asdict(entry))


def _gaps(head: Row, rows: Sequence[Row]) -> tuple[int, dict[str, str]]:
    """The new ``sealed_below`` and the numbers still to wait for: skipped ones that an
    open transaction may yet commit, known gone once the oldest open id passes theirs."""
    below, taken = int(head["sealed_below"]), {int(r["sequence"]) for r in rows}
    gaps = {n: x for n, x in json.loads(head["gaps"]).items() if int(x) > int(head["done"])}
    new = [n for n in taken if n < below]
    if new:
        asked = str(rows[-1]["asked"])
        gaps |= {str(n): asked for n in range(min(new) + 1, below) if n not in taken}
        below = min(new)
    return below, {n: x for n, x in gaps.items() if int(n) not in taken}


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
        gaps = [int(n) for n in json.loads(head["gaps"])]
        params = {"below": head["sealed_below"], "gaps": json.dumps(gaps), "limit": SEAL_BATCH}
        rows = await connection.rows(UNSEALED[self.dialect], params)
        below, waiting = _gaps(head, rows)
        if not rows:
            if waiting != json.loads(head["gaps"]):
                kept = {"sequence": head["sequence"], "hash": head["hash"], "below": below}
                await connection.count(MOVE_HEAD, kept | {"gaps": json.dumps(waiting)})
            return 0
        sequence, prev_hash = int(head["sequence"]), head["hash"]
        listed = []
        for row in rows:
            sequence += 1
            prev_hash = _chained_hash(row, sequence, prev_hash)
            listed.append([int(row["sequence"]), prev_hash])
        seal = {"sequence": sequence, "prev_hash": head["hash"], "records": json.dumps(listed)}
        await connection.count(SEAL, seal | {"until": max(r["at"] for r in rows)})
        moved = {"sequence": sequence, "hash": prev_hash, "below": below}
        await connection.count(MOVE_HEAD, moved | {"gaps": json.dumps(waiting)})
        return len(rows)

    async def audit_records(
        self, *, after: int = 0, limit: int = 100, since: str | None = None
    ) -> list[AuditRecord]:
        params = {"after": after, "limit": limit, "since": since}
        found = await self.read_converted(RECORDS, params, _records, "audit_records")
        seals_after = after
        while True:
            seals = await self.read_rows(SEALS, {"after": seals_after}, "audit_records")
            for seal in seals:
                if len(found) >= limit:
                    break
                found += [
                    r
                    for r in await self._sealed(seal)
                    if r.sequence > after and (since is None or r.at >= since)
                ]
            if len(seals) < 8 or len(found) >= limit:
                return sorted(found, key=lambda r: r.sequence)[:limit]
            seals_after = int(seals[-1]["sequence"])

    async def _sealed(self, seal: Row) -> list[AuditRecord]:
        """A seal's records at their places; a record no longer stored leaves its place empty."""
        listed = json.loads(seal["records"])
        rows = {
            int(r["sequence"]): r
            for r in await self.read_rows(LISTED[self.dialect], _numbers(listed), "audit_records")
        }
        place, prev_hash, records = int(seal["sequence"]) - len(listed), seal["prev_hash"], []
        for number, hashed in listed:
            place += 1
            if number in rows:
                records.append(
                    record_of(rows[number], sequence=place, prev_hash=prev_hash, hash=hashed)
                )
            prev_hash = hashed
        return records

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

    async def audit_stray(self) -> int | None:
        row = first(await self.read_rows(STRAY[self.dialect], {}, "audit_stray"))
        return None if row is None else int(row["sequence"])

    async def prune_audit(self, before: str) -> int:
        async def prune(connection: Connection) -> int:
            last = first(await connection.rows(LAST_BEFORE, {"before": before}))
            kept = (
                None if last is None else {"sequence": int(last["sequence"]), "hash": last["hash"]}
            )
            numbers: list[int] = []
            for seal in await connection.rows(PRUNED_SEALS, {"before": before}):
                listed = json.loads(seal["records"])
                old = await self._stamped_before(connection, seal, listed, before)
                if old:
                    numbers += [n for n, _ in old]
                    place = int(seal["sequence"]) - len(listed) + len(old)
                    kept = {"sequence": place, "hash": old[-1][1]}
            if kept is None:
                return 0
            await connection.count(MOVE_ANCHOR, kept)
            await connection.count(DELETE_SEALS, kept)
            pruned = await connection.count(DELETE_THROUGH, kept)
            listed_params = {"numbers": json.dumps(numbers)}
            return pruned + await connection.count(DELETE_LISTED[self.dialect], listed_params)

        return await self.background_transaction(prune, "prune_audit")

    async def _stamped_before(
        self, connection: Connection, seal: Row, listed: list[list[Any]], before: str
    ) -> list[list[Any]]:
        """The seal's records before the first stamped at or after ``before``."""
        if seal["until"] < before:
            return listed
        found = await connection.rows(LISTED[self.dialect], _numbers(listed))
        kept = {int(r["sequence"]) for r in found if r["at"] >= before}
        return list(itertools.takewhile(lambda n: n[0] not in kept, listed))


def _numbers(listed: list[list[Any]]) -> dict[str, str]:
    return {"numbers": json.dumps([n for n, _ in listed])}


def _records(rows: Sequence[Row]) -> list[AuditRecord]:
    return [record_of(row) for row in rows]
