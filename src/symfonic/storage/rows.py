"""From table rows to the port's records, with every timestamp aware and in UTC on both stores."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from symfonic.core.contracts.pauses import CheckpointRecord, PauseRecord
from symfonic.core.contracts.readdressing import Readdressing, ReaddressKind
from symfonic.core.contracts.sessions import SessionRecord
from symfonic.core.contracts.types import ApprovalVote, Escalation, InteractionKind, PauseState
from symfonic.storage.statements import Row, json_value

PAUSE_COLUMNS = (
    "pause_id, session_id, principal, agent, audience, kind, query, response_schema,"
    " tool_call_id, interrupt_id, base_revision, state, created_at, expires_at, supersedes,"
    " claim_id, lease_until, answered_by, answered_at, answer, answer_status, outcome,"
    " parent_session_id, delegated_pause_id, sub_agent, args_digest, edited_args_digest,"
    " escalations, escalation_step, kept_audiences, readdressed, approvals_required,"
    " allow_requester, approvals, server"
)
SESSION_COLUMNS = "session_id, principal, agent, revision, metadata, created_at, run_id, run_lease"
# A pause row's checkpoint, with what it shares with the pause.
CHECKPOINT_COLUMNS = "pause_id, session_id, base_revision, checkpoint_format, checkpoint"


def aware(value: datetime | str | None) -> datetime | None:
    """``value`` as an aware UTC datetime (``None`` stays ``None``)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _required(value: datetime | str | None) -> datetime:
    stamped = aware(value)
    assert stamped is not None
    return stamped


def pause_of(row: Row) -> PauseRecord:
    return PauseRecord(
        pause_id=row["pause_id"],
        session_id=row["session_id"],
        principal=row["principal"],
        agent=row["agent"],
        audience=row["audience"],
        kind=InteractionKind(row["kind"]),
        query=row["query"],
        response_schema=json_value(row["response_schema"]),
        tool_call_id=row["tool_call_id"],
        interrupt_id=row["interrupt_id"],
        base_revision=row["base_revision"],
        state=PauseState(row["state"]),
        created_at=_required(row["created_at"]),
        expires_at=_required(row["expires_at"]),
        supersedes=row["supersedes"],
        claim_id=row["claim_id"],
        lease_until=aware(row["lease_until"]),
        answered_by=row["answered_by"],
        answered_at=aware(row["answered_at"]),
        answer=json_value(row["answer"]),
        answer_status=row["answer_status"],
        outcome=json_value(row["outcome"]),
        parent_session_id=row["parent_session_id"],
        delegated_pause_id=row["delegated_pause_id"],
        sub_agent=row["sub_agent"],
        args_digest=row["args_digest"],
        edited_args_digest=row["edited_args_digest"],
        escalations=escalations_of(json_value(row["escalations"])),
        escalation_step=int(row["escalation_step"] or 0),
        kept_audiences=tuple(json_value(row["kept_audiences"]) or ()),
        readdressed=readdressing_of(json_value(row["readdressed"])),
        approvals_required=int(row["approvals_required"] or 1),
        allow_requester=bool(row["allow_requester"]),
        approvals=approvals_of(json_value(row["approvals"])),
        server=row["server"],
    )


def approvals_json(votes: tuple[ApprovalVote, ...]) -> list[dict[str, str]]:
    return [{"principal": v.principal, "at": v.at.isoformat()} for v in votes]


def approvals_of(value: list[dict[str, str]] | None) -> tuple[ApprovalVote, ...]:
    return tuple(ApprovalVote(v["principal"], _required(v["at"])) for v in value or ())


def escalations_json(chain: tuple[Escalation, ...]) -> list[dict[str, Any]] | None:
    """A chain as the row's JSON; ``None`` for none."""
    if not chain:
        return None
    return [
        {"after": s.after, "audience": s.audience, "keep": s.keep_previous, "extend": s.extend}
        for s in chain
    ]


def escalations_of(value: list[dict[str, Any]] | None) -> tuple[Escalation, ...]:
    return tuple(
        Escalation(float(s["after"]), str(s["audience"]), bool(s["keep"]), s.get("extend"))
        for s in value or ()
    )


def readdressing_json(done: Readdressing) -> dict[str, Any]:
    return {
        "kind": done.kind.value,
        "previous": done.previous,
        "audience": done.audience,
        "at": done.at.isoformat(),
        "by": done.by,
        "reason": done.reason,
        "after": done.after,
    }


def readdressing_of(value: dict[str, Any] | None) -> Readdressing | None:
    if value is None:
        return None
    return Readdressing(
        kind=ReaddressKind(value["kind"]),
        previous=value["previous"],
        audience=value["audience"],
        at=_required(value["at"]),
        by=value.get("by"),
        reason=value.get("reason"),
        after=value.get("after"),
    )


def session_of(row: Row, *, now: datetime) -> SessionRecord:
    lease = aware(row["run_lease"])
    running = row["run_id"] is not None and lease is not None and lease > now
    return SessionRecord(
        session_id=row["session_id"],
        principal=row["principal"],
        agent=row["agent"],
        revision=row["revision"],
        metadata=json_value(row["metadata"]),
        created_at=_required(row["created_at"]),
        running=running,
        run_id=row["run_id"] if running else None,
    )


def checkpoint_of(row: Row) -> CheckpointRecord | None:
    """The checkpoint in a row of `CHECKPOINT_COLUMNS`; ``None`` once it is dropped."""
    body = row["checkpoint"]
    if body is None:
        return None
    return CheckpointRecord(
        pause_id=row["pause_id"],
        session_id=row["session_id"],
        format_version=row["checkpoint_format"],
        base_revision=row["base_revision"],
        body=json_value(body),
    )
