"""From table rows to the port's records, with every timestamp in UTC.

SQLite hands timestamps back naive (it stores the text it was given); PostgreSQL
hands them back aware. Records leave here aware, so callers compare them with
``datetime.now(UTC)`` the same way on both stores.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from symfonic.core.contracts.store import CheckpointRecord, PauseRecord, SessionRecord
from symfonic.core.contracts.types import InteractionKind, PauseState


def aware(value: datetime | None) -> datetime | None:
    """``value`` as an aware UTC datetime (``None`` stays ``None``)."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def _required(value: datetime | None) -> datetime:
    stamped = aware(value)
    assert stamped is not None
    return stamped


def pause_of(row: sa.Row[Any]) -> PauseRecord:
    m = row._mapping
    return PauseRecord(
        pause_id=m["pause_id"],
        session_id=m["session_id"],
        principal=m["principal"],
        agent=m["agent"],
        audience=m["audience"],
        kind=InteractionKind(m["kind"]),
        query=m["query"],
        response_schema=m["response_schema"],
        tool_call_id=m["tool_call_id"],
        interrupt_id=m["interrupt_id"],
        base_revision=m["base_revision"],
        state=PauseState(m["state"]),
        created_at=_required(m["created_at"]),
        expires_at=_required(m["expires_at"]),
        supersedes=m["supersedes"],
        claim_id=m["claim_id"],
        lease_until=aware(m["lease_until"]),
        answered_by=m["answered_by"],
        answered_at=aware(m["answered_at"]),
        answer=m["answer"],
        answer_status=m["answer_status"],
        outcome=m["outcome"],
    )


def session_of(row: sa.Row[Any], *, now: datetime) -> SessionRecord:
    m = row._mapping
    lease = aware(m["run_lease"])
    return SessionRecord(
        session_id=m["session_id"],
        principal=m["principal"],
        agent=m["agent"],
        revision=m["revision"],
        metadata=m["metadata"],
        created_at=_required(m["created_at"]),
        running=m["run_id"] is not None and lease is not None and lease > now,
    )


def checkpoint_of(row: sa.Row[Any]) -> CheckpointRecord:
    m = row._mapping
    return CheckpointRecord(
        pause_id=m["pause_id"],
        session_id=m["session_id"],
        format_version=m["format_version"],
        base_revision=m["base_revision"],
        body=m["body"],
    )
