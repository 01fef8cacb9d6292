"""Handing a pending pause to another audience, exactly once: one conditional `UPDATE` on its
step or state, with the change, the audiences that keep access and the webhooks owed written in
the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from symfonic.core.contracts.pauses import CheckpointRecord, PauseRecord
from symfonic.core.contracts.readdressing import (
    Readdressed,
    Readdressing,
    ReaddressKind,
    Reassignment,
    kept_owner,
)
from symfonic.core.contracts.webhooks import WebhookEventType
from symfonic.core.telemetry import logs, store_spans
from symfonic.storage.rows import (
    CHECKPOINT_COLUMNS,
    PAUSE_COLUMNS,
    checkpoint_of,
    pause_of,
    readdressing_json,
)
from symfonic.storage.statements import Dialect, Statement, first, json_text
from symfonic.storage.transactions import Connection, SqlTransactions

# Steps applied in one pass at most; a pass reads again until none is due.
ESCALATION_BATCH = 100
# Escalation steps a reassignment may find applied under it before it gives up.
REASSIGN_ATTEMPTS = 3

DUE = Statement(
    f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses WHERE state = 'pending'"
    " AND escalate_at <= :now AND expires_at > :now AND parent_session_id IS NULL"
    " ORDER BY escalate_at LIMIT :batch"
)
PAUSE = Statement(f"SELECT {PAUSE_COLUMNS} FROM symfonic_pauses WHERE pause_id = :pause_id")
CHECKPOINT = Statement(
    f"SELECT {CHECKPOINT_COLUMNS} FROM symfonic_pauses WHERE pause_id = :pause_id"
)
_SET = (
    "UPDATE symfonic_pauses SET audience = :audience, escalation_step = :next_step,"
    " escalate_at = :escalate_at, kept_audiences = :kept, readdressed = :readdressed,"
    " expires_at = :expires_at WHERE pause_id = :pause_id AND state = 'pending'"
    " AND expires_at > :now"
)
# Both on the step read: a step applied meanwhile makes the update miss, never undo it.
ESCALATE = Statement(f"{_SET} AND escalation_step = :step")
FORGET_KEPT = Statement("DELETE FROM symfonic_pause_audiences WHERE pause_id = :pause_id")
KEEP = Statement(
    "INSERT INTO symfonic_pause_audiences (audience, pause_id) VALUES (:audience, :pause_id)"
    " ON CONFLICT (audience, pause_id) DO NOTHING"
)
_CHANGE = (
    "INSERT INTO symfonic_pause_events (pause_id, session_id, state, at)"
    " VALUES (:pause_id, :session_id, :kind, {now}) RETURNING id, at"
)
RECORD_CHANGE = {
    Dialect.SQLITE: Statement(_CHANGE.format(now="strftime('%Y-%m-%d %H:%M:%f', 'now') || '000'")),
    Dialect.POSTGRESQL: Statement(
        "WITH change AS (" + _CHANGE.format(now="clock_timestamp()") + ")"
        " SELECT id, at, pg_notify('symfonic_pause_changes', CAST(id AS text)) AS notified"
        " FROM change"
    ),
}
OWE = Statement(
    "INSERT INTO symfonic_webhook_deliveries (message_id, url, type, pause_id, session_id,"
    " occurred_at, detail, state, attempts, next_attempt_at)"
    " SELECT :message_id, s.url, s.event_type, :pause_id, :session_id, :at, :detail,"
    " 'pending', 0, :at FROM symfonic_webhook_subscriptions s WHERE s.event_type = :type"
    " ON CONFLICT (url, message_id) DO NOTHING"
)
_EVENT_TYPE = {
    ReaddressKind.ESCALATED: WebhookEventType.PAUSE_ESCALATED,
    ReaddressKind.REASSIGNED: WebhookEventType.PAUSE_REASSIGNED,
}


def first_step_at(pause: PauseRecord) -> datetime | None:
    """When a new pause's first escalation step is due; ``None`` without a chain."""
    if not pause.escalations:
        return None
    return pause.created_at + timedelta(seconds=pause.escalations[0].after)


@dataclass(frozen=True)
class _Move:
    """One re-addressing of one pause: the row's new values and what it says happened."""

    pause: PauseRecord
    done: Readdressing
    keep_previous: bool
    expires_at: datetime
    escalate_at: datetime | None

    def applied(self) -> Readdressed:
        """What the store hands back once the move is applied."""
        pause = self.pause
        escalated = self.done.kind is ReaddressKind.ESCALATED
        return Readdressed(
            pause.pause_id,
            pause.session_id,
            pause.agent,
            pause.principal,
            self.done,
            step=pause.escalation_step + 1 if escalated else None,
        )

    def kept(self) -> tuple[str, ...]:
        """Who still answers besides the new audience."""
        if not self.keep_previous:
            return ()
        before = self.pause.audience or kept_owner(self.pause.principal)
        kept = dict.fromkeys((*self.pause.kept_audiences, before))
        kept.pop(self.done.audience, None)
        return tuple(kept)

    def params(self, now: datetime) -> dict[str, Any]:
        kept = self.kept()
        return {
            "pause_id": self.pause.pause_id,
            "audience": self.done.audience,
            "step": self.pause.escalation_step,
            "next_step": self.pause.escalation_step + (self.done.kind is ReaddressKind.ESCALATED),
            "escalate_at": self.escalate_at,
            "kept": json_text(list(kept)) if kept else None,
            "readdressed": json_text(readdressing_json(self.done)),
            "expires_at": self.expires_at,
            "now": now,
        }


def _escalation(pause: PauseRecord, now: datetime) -> _Move:
    step = pause.escalations[pause.escalation_step]
    following = pause.escalations[pause.escalation_step + 1 :]
    expires_at = pause.expires_at
    if step.extend is not None:
        expires_at = max(expires_at, now + timedelta(seconds=step.extend))
    done = Readdressing(
        ReaddressKind.ESCALATED, pause.audience, step.audience, now, after=step.after
    )
    due = pause.created_at + timedelta(seconds=following[0].after) if following else None
    return _Move(pause, done, step.keep_previous, expires_at, due)


async def _apply(
    connection: Connection, dialect: Dialect, move: _Move, update: Statement, now: datetime
) -> bool:
    """The conditional update, then, if it matched, its kept audiences, change and webhooks."""
    if await connection.count(update, move.params(now)) != 1:
        return False
    pause_id, session_id = move.pause.pause_id, move.pause.session_id
    await connection.count(FORGET_KEPT, {"pause_id": pause_id})
    kept = move.kept()
    if kept:
        await connection.each(KEEP, [{"audience": a, "pause_id": pause_id} for a in kept])
    kind = move.done.kind
    rows = await connection.rows(
        RECORD_CHANGE[dialect], {"pause_id": pause_id, "session_id": session_id, "kind": kind}
    )
    detail = {k: v for k, v in readdressing_json(move.done).items() if k not in ("kind", "at")}
    await connection.count(
        OWE,
        {
            # As the pause-change trigger names its events: the pause's random id makes
            # it unique across databases, so a store that was reset never repeats one.
            "message_id": f"msg_pause_{pause_id}_{rows[0]['id']}",
            "pause_id": pause_id,
            "session_id": session_id,
            "at": rows[0]["at"],
            "detail": json_text(detail),
            "type": _EVENT_TYPE[kind].value,
        },
    )
    return True


async def escalate_due(store: SqlTransactions, now: datetime) -> list[Readdressed]:
    """Apply the escalation steps due at ``now``, each in a transaction of its own."""
    applied = await _escalate_due(store, now)
    await _readdressed(store, applied, "escalate_due")
    return applied


async def _escalate_due(store: SqlTransactions, now: datetime) -> list[Readdressed]:
    applied: list[Readdressed] = []
    while True:
        due = await store.read_rows(DUE, {"now": now, "batch": ESCALATION_BATCH}, "escalate_due")
        moved = 0
        for row in due:
            move = _escalation(pause_of(row), now)

            async def escalate(connection: Connection, move: _Move = move) -> bool:
                return await _apply(connection, store.dialect, move, ESCALATE, now)

            if await store.background_transaction(escalate, "escalate_due"):
                applied.append(move.applied())
                moved += 1
        # Nothing moved: every due step was another worker's to apply.
        if not due or not moved:
            return applied


async def reassign_pause(store: SqlTransactions, asked: Reassignment) -> Readdressed | None:
    """Hand a pending, unexpired pause to ``asked.audience``; ``None`` if it is not one."""

    async def reassign(connection: Connection) -> Readdressed | None:
        # Read, then update on what was read; an escalation step applied in
        # between makes the update miss, and the pause is read again.
        for _ in range(REASSIGN_ATTEMPTS):
            rows = await connection.rows(PAUSE, {"pause_id": asked.pause_id})
            if not rows or not pause_of(rows[0]).answerable(asked.at):
                return None
            pause = pause_of(rows[0])
            done = Readdressing(
                ReaddressKind.REASSIGNED,
                pause.audience,
                asked.audience,
                asked.at,
                by=asked.by,
                reason=asked.reason,
            )
            # A reassignment ends the chain: the operator chose who answers.
            move = _Move(pause, done, asked.keep_previous, pause.expires_at, None)
            if await _apply(connection, store.dialect, move, ESCALATE, asked.at):
                return move.applied()
        return None

    moved = await store.transaction(reassign, "reassign_pause")
    await _readdressed(store, [] if moved is None else [moved], "reassign_pause")
    return moved


async def _readdressed(
    store: SqlTransactions, applied: Sequence[Readdressed], operation: str
) -> None:
    """The lines of what was applied, and its spans while an SDK records."""
    logs.readdressed(applied)
    if store.traced and applied:

        async def checkpoint(pause_id: str) -> CheckpointRecord | None:
            row = first(await store.read_rows(CHECKPOINT, {"pause_id": pause_id}, operation))
            return None if row is None else checkpoint_of(row)

        await store_spans.readdressed(applied, checkpoint)


class SqlPauseAddressing(SqlTransactions):
    """The port's re-addressing of a pending pause, in SQL both databases accept."""

    async def escalate_due(self, now: datetime) -> list[Readdressed]:
        return await escalate_due(self, now)

    async def reassign_pause(self, reassignment: Reassignment) -> Readdressed | None:
        return await reassign_pause(self, reassignment)
