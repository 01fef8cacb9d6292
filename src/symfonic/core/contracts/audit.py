"""The audit trail's role: hash-chained records of what happened to each pause, written in the
transaction that changed it and sealed into the chain after it commits (docs/audit.md).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any, Protocol

import rfc8785

GENESIS = "0" * 64
# Hashed only where set (a re-addressing's), so records written before they
# existed keep their hashes.
OPTIONAL_FIELDS = frozenset({"from_audience", "to_audience"})


def hashed_fields(record: dict[str, Any]) -> dict[str, Any]:
    """The fields a record's hash covers: all but ``hash``, an unset optional one left out."""
    return {
        name: value
        for name, value in record.items()
        if name != "hash" and not (value is None and name in OPTIONAL_FIELDS)
    }


@dataclass(frozen=True)
class AuditEntry:
    """What one audited change says; the store numbers, stamps and chains it."""

    event: str
    session_id: str
    agent: str
    pause_id: str | None = None
    principal: str | None = None
    decision: str | None = None
    reason: str | None = None
    args_digest: str | None = None
    edited_args_digest: str | None = None
    parent_session_id: str | None = None
    # A re-addressing's: the audience before (``principal:NAME``: its owner) and after.
    from_audience: str | None = None
    to_audience: str | None = None


@dataclass(frozen=True)
class AuditRecord:
    """One record as stored: the entry, its place in the chain and its hash."""

    sequence: int
    at: str
    event: str
    session_id: str | None
    agent: str | None
    pause_id: str | None
    principal: str | None
    decision: str | None
    reason: str | None
    args_digest: str | None
    edited_args_digest: str | None
    parent_session_id: str | None
    prev_hash: str
    hash: str
    from_audience: str | None = None
    to_audience: str | None = None

    def computed_hash(self) -> str:
        """The hash this record's fields give, to compare with the one it holds."""
        return hashlib.sha256(rfc8785.dumps(hashed_fields(asdict(self)))).hexdigest()

    def exported(self) -> dict[str, Any]:
        """The record as exported: exactly the fields hashed, and ``hash``."""
        return {**hashed_fields(asdict(self)), "hash": self.hash}


@dataclass(frozen=True)
class AuditAnchor:
    """Where the kept chain starts (the last pruned record) and where it ends."""

    anchor_sequence: int
    anchor_hash: str
    head_sequence: int
    head_hash: str
    # Records committed but not yet given their place in the chain, and the oldest's stamp.
    unsealed: int = 0
    unsealed_since: str | None = None

    def unsealed_seconds(self, now: datetime) -> float:
        """How long the oldest unsealed record has waited for its place; 0 when none does."""
        if self.unsealed_since is None:
            return 0.0
        since = datetime.fromisoformat(self.unsealed_since.replace("Z", "+00:00"))
        return max(0.0, (now - since).total_seconds())


@dataclass(frozen=True)
class ChainBreak:
    """The first place the chain does not hold, in words."""

    sequence: int
    message: str


class AuditLog(Protocol):
    """Reading and pruning the audit trail; the store appends as pauses change."""

    async def append_audit(self, entry: AuditEntry) -> None:
        """Append one record for a change audited outside a pause's own transition."""
        ...

    async def seal_audit(self) -> int:
        """Chain every committed unsealed record, oldest first; how many were sealed."""
        ...

    async def audit_records(
        self, *, after: int = 0, limit: int = 100, since: str | None = None
    ) -> list[AuditRecord]:
        """Records past sequence ``after`` (stamped at or after ``since``), oldest first."""
        ...

    async def audit_anchor(self) -> AuditAnchor:
        """The chain's anchor and head, and how many records wait to be sealed."""
        ...

    async def audit_stray(self) -> int | None:
        """The number of a record no seal places and no seal waits for, if one is stored:
        it was inserted after the fact, as a seal places every record it has seen."""
        ...

    async def prune_audit(self, before: str) -> int:
        """Delete records stamped before ``before``, keeping the last one's hash as anchor."""
        ...


class ChainWalk:
    """The chain checked one record at a time, from the anchor, in sequence order."""

    def __init__(self, anchor: AuditAnchor) -> None:
        self.anchor = anchor
        self.checked = 0
        self._sequence, self._prev = anchor.anchor_sequence + 1, anchor.anchor_hash

    def step(self, record: AuditRecord) -> ChainBreak | None:
        """The break ``record`` shows, if any; it must come right after the last one."""
        if record.sequence != self._sequence:
            return _gap(self._sequence, record.sequence)
        if record.prev_hash != self._prev:
            return ChainBreak(
                record.sequence,
                f"record {record.sequence} does not follow record {record.sequence - 1}: "
                "the earlier record was changed or replaced",
            )
        if record.computed_hash() != record.hash:
            return ChainBreak(
                record.sequence,
                f"record {record.sequence} ({record.event}, pause {record.pause_id}) was "
                "changed after it was written: its fields no longer give its hash",
            )
        self.checked += 1
        self._sequence, self._prev = record.sequence + 1, record.hash
        return None

    def finish(self) -> ChainBreak | None:
        """The break at the chain's end: its newest records removed, or the last replaced."""
        if self._sequence <= self.anchor.head_sequence:
            return _gap(self._sequence, self.anchor.head_sequence + 1)
        if self._prev != self.anchor.head_hash:
            return ChainBreak(
                self.anchor.head_sequence,
                f"record {self.anchor.head_sequence}, the newest, was changed or replaced",
            )
        return None


async def verify_log(log: AuditLog, page: int = 1000) -> tuple[int, ChainBreak | None]:
    """How many records held, and the first break in the whole kept chain, read a page
    at a time so a long trail is never held in memory at once."""
    walk = ChainWalk(await log.audit_anchor())
    after = walk.anchor.anchor_sequence
    while True:
        batch = await log.audit_records(after=after, limit=page)
        for record in batch:
            broken = await _past_head(log, walk, record) or walk.step(record)
            if broken is not None:
                return walk.checked, broken
        if len(batch) < page:
            return walk.checked, walk.finish() or await _stray(log)
        after = batch[-1].sequence


async def _past_head(log: AuditLog, walk: ChainWalk, record: AuditRecord) -> ChainBreak | None:
    """A record past the head read first was sealed since, or inserted: the head read
    now tells which, since a seal moves the head in the transaction that seals."""
    if record.sequence <= walk.anchor.head_sequence:
        return None
    head = await log.audit_anchor()
    walk.anchor = replace(walk.anchor, head_sequence=head.head_sequence, head_hash=head.head_hash)
    if record.sequence <= head.head_sequence:
        return None
    return ChainBreak(
        record.sequence,
        f"record {record.sequence} was inserted after the fact: the chain ends at record "
        f"{head.head_sequence}",
    )


async def _stray(log: AuditLog) -> ChainBreak | None:
    stray = await log.audit_stray()
    if stray is None:
        return None
    return ChainBreak(
        stray, f"a record was inserted after the fact: the stored record {stray} is in no seal"
    )


def _gap(missing: int, found: int) -> ChainBreak:
    if found == missing + 1:
        return ChainBreak(missing, f"record {missing} was removed")
    return ChainBreak(missing, f"records {missing} to {found - 1} were removed")
