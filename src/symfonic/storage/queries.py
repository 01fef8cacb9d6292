"""The statements both adapters run, written once in the SQL both databases accept.

Each is a :class:`~symfonic.storage.statements.Statement` with ``:name``
parameters, and the functions below build those parameters from the port's
records, so the units of work in :mod:`symfonic.storage.sql_store` and the
single statements in :mod:`symfonic.storage.postgres_statements` bind the same
values the same way. What a statement's condition guarantees is said where it
is used.
"""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any

from symfonic.core.contracts.store import CheckpointRecord, Claim, PauseRecord
from symfonic.core.contracts.types import InteractionKind
from symfonic.storage.rows import CHECKPOINT_COLUMNS, PAUSE_COLUMNS, SESSION_COLUMNS
from symfonic.storage.statements import Statement, json_text

CREATE_SESSION = Statement(
    "INSERT INTO symfonic_sessions"
    " (session_id, principal, agent, revision, message_count, metadata, created_at, active_at)"
    " VALUES (:session_id, :principal, :agent, :revision, 0, :metadata, :created_at,"
    " :created_at)"
)
GET_SESSION = Statement(
    f"SELECT {SESSION_COLUMNS} FROM symfonic_sessions WHERE session_id = :session_id"
)
_WAITING = "state = 'pending' AND expires_at > :now"
BEGIN_RUN = Statement(
    "UPDATE symfonic_sessions SET run_id = :run_id, run_lease = :lease_until, active_at = :now"
    " WHERE session_id = :session_id AND (run_id IS NULL OR run_lease < :now)"
    # The casts name the parameters' types where PostgreSQL cannot infer them.
    " AND (CAST(:principal AS TEXT) IS NULL OR principal = :principal)"
    " AND (CAST(:base_revision AS INTEGER) IS NULL OR revision = :base_revision)"
    " AND NOT EXISTS (SELECT 1 FROM symfonic_pauses WHERE session_id = :session_id"
    f" AND (state = 'claimed' OR (CAST(:refuse_pending AS BOOLEAN) AND {_WAITING})))"
    f" RETURNING {SESSION_COLUMNS}, (SELECT count(*) FROM symfonic_pauses"
    f" WHERE session_id = :session_id AND {_WAITING}) AS pending"
)
END_RUN = Statement(
    "UPDATE symfonic_sessions SET run_id = NULL, run_lease = NULL"
    " WHERE session_id = :session_id AND run_id = :run_id"
)
_NEXT_REVISION = (
    "UPDATE symfonic_sessions"
    " SET revision = revision + 1, message_count = message_count + :added{end_run}"
    " WHERE session_id = :session_id AND revision = :base_revision"
    " RETURNING revision, message_count"
)
NEXT_REVISION = Statement(_NEXT_REVISION.format(end_run=""))
NEXT_REVISION_ENDING_RUN = Statement(
    _NEXT_REVISION.format(end_run=", run_id = NULL, run_lease = NULL")
)
INSERT_MESSAGE = Statement(
    "INSERT INTO symfonic_messages (session_id, seq, revision, body)"
    " VALUES (:session_id, :seq, :revision, :body)"
)

# Every transition of a claimed pause: only the claim that holds it may make it.
_CLAIMED_BY = "WHERE session_id = :session_id AND claim_id = :claim_id AND state = 'claimed'"
# A settled pause's turn is in the session's history (published) or in the
# pause that replaced it (superseded): its checkpoint is dropped as it settles.
DROP_CHECKPOINT = "checkpoint_format = NULL, checkpoint = NULL"
SUPERSEDE = Statement(
    f"UPDATE symfonic_pauses SET state = 'superseded', outcome = :outcome, {DROP_CHECKPOINT}"
    f" {_CLAIMED_BY} RETURNING pause_id"
)
PUBLISH_PAUSE = Statement(
    f"UPDATE symfonic_pauses SET state = 'published', outcome = :outcome, {DROP_CHECKPOINT}"
    f" {_CLAIMED_BY} RETURNING pause_id, base_revision"
)
RENEW_CLAIM = Statement(f"UPDATE symfonic_pauses SET lease_until = :lease_until {_CLAIMED_BY}")
ABANDON_CLAIM = Statement(f"UPDATE symfonic_pauses SET state = 'abandoned' {_CLAIMED_BY}")
_CLAIM = (
    "UPDATE symfonic_pauses SET state = 'claimed', claim_id = :claim_id,"
    " lease_until = :lease_until, answered_by = :principal, answered_at = :at,"
    " answer = :answer, answer_status = :status"
    " WHERE pause_id = :pause_id AND state = 'pending' AND expires_at > :now"
)
CLAIM = Statement(f"{_CLAIM} RETURNING {CHECKPOINT_COLUMNS}")


def own_claim(kinds: int) -> Statement:
    """The claim of a pause its owner answers unread, among ``kinds`` kinds.

    Everything the read would have checked first is in the condition: the pause
    is addressed to no audience and is the answerer's own, of this agent, of a
    kind the answer is valid for whatever its schema. It returns the row.
    """
    names = ", ".join(f":kind_{i}" for i in range(kinds))
    return Statement(
        f"{_CLAIM} AND audience IS NULL AND principal = :principal AND agent = :agent"
        f" AND kind IN ({names}) RETURNING {PAUSE_COLUMNS}, checkpoint_format, checkpoint"
    )


ABANDON_PENDING = Statement(
    "UPDATE symfonic_pauses SET state = 'abandoned'"
    " WHERE session_id = :session_id AND state = 'pending'"
)


def insert_row(table: str, columns: str, values: str, *, only_if: str | None = None) -> Statement:
    """``INSERT … VALUES``; with ``only_if``, ``INSERT … SELECT … FROM`` that relation."""
    if only_if is None:
        return Statement(f"INSERT INTO {table} ({columns}) VALUES ({values})")
    return Statement(f"INSERT INTO {table} ({columns}) SELECT {values} FROM {only_if}")


PAUSE_INSERT = (
    "symfonic_pauses",
    "pause_id, session_id, principal, agent, audience, kind, query, response_schema,"
    " tool_call_id, interrupt_id, base_revision, state, created_at, expires_at, supersedes,"
    " checkpoint_format, checkpoint",
    ":pause_id, :session_id, :principal, :agent, :audience, :kind, :query, :response_schema,"
    " :tool_call_id, :interrupt_id, :base_revision, 'pending', :created_at, :expires_at,"
    " :supersedes, :checkpoint_format, :checkpoint",
)
INSERT_PAUSE = insert_row(*PAUSE_INSERT)
LOAD_CHECKPOINT = Statement(
    f"SELECT {CHECKPOINT_COLUMNS} FROM symfonic_pauses WHERE pause_id = :pause_id"
)
GET_PAUSE = Statement(f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses WHERE pause_id = :pause_id")
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


@cache
def sweep_statements(lock: str) -> tuple[Statement, Statement]:
    """Expire and abandon, each over the stale rows no other transaction holds."""

    def stale(new_state: str, where: str) -> Statement:
        return Statement(
            f"UPDATE symfonic_pauses SET state = '{new_state}' WHERE pause_id IN"
            f" (SELECT pause_id FROM symfonic_pauses WHERE {where}{lock}) AND {where}"
        )

    return (
        stale("expired", "state = 'pending' AND expires_at <= :now"),
        stale("abandoned", "state = 'claimed' AND lease_until <= :now"),
    )


def pause_params(
    pause: PauseRecord, checkpoint: CheckpointRecord, *, supersedes: str | None
) -> dict[str, Any]:
    """The parameters of a pending pause row's insert, its checkpoint with it."""
    if (checkpoint.pause_id, checkpoint.session_id, checkpoint.base_revision) != (
        pause.pause_id,
        pause.session_id,
        pause.base_revision,
    ):
        raise ValueError(f"checkpoint {checkpoint.pause_id} is not pause {pause.pause_id}'s turn")
    return {
        "pause_id": pause.pause_id,
        "session_id": pause.session_id,
        "principal": pause.principal,
        "agent": pause.agent,
        "audience": pause.audience,
        "kind": pause.kind.value,
        "query": pause.query,
        "response_schema": json_text(pause.response_schema),
        "tool_call_id": pause.tool_call_id,
        "interrupt_id": pause.interrupt_id,
        "base_revision": pause.base_revision,
        "created_at": pause.created_at,
        "expires_at": pause.expires_at,
        "supersedes": supersedes,
        "checkpoint_format": checkpoint.format_version,
        "checkpoint": json_text(checkpoint.body),
    }


def claim_params(claim: Claim, *, now: datetime) -> dict[str, Any]:
    """The parameters of the claim's conditional update."""
    return {
        "pause_id": claim.pause_id,
        "claim_id": claim.claim_id,
        "lease_until": claim.lease_until,
        "principal": claim.principal,
        "at": claim.at,
        "answer": json_text(claim.answer),
        "status": claim.status,
        "now": now,
    }


def own_claim_params(
    claim: Claim, *, agent: str, kinds: frozenset[InteractionKind], now: datetime
) -> dict[str, Any]:
    """The parameters of :func:`own_claim`'s statement for ``len(kinds)`` kinds."""
    named = {f"kind_{i}": kind.value for i, kind in enumerate(sorted(kinds))}
    return {**claim_params(claim, now=now), "agent": agent, **named}


def completed_outcome(answer: str) -> str | None:
    """What a published pause records as its outcome (what a replay returns)."""
    return json_text({"status": "complete", "answer": answer})
