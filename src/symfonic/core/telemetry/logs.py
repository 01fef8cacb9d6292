"""One structured log line per pause change, written once by the worker that made it.

Each line says who, what and why, in words and as fields under `FIELDS` (ids, names and
counts; never anything a person wrote, nor a token). `JsonFormatter` adds the trace ids.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

from opentelemetry import trace

from symfonic.core.contracts.approvals import Ballot, VoteOutcome
from symfonic.core.contracts.interrupts import Interrupted
from symfonic.core.contracts.pauses import Claim, ClaimedPause, NewPause, SweepReport
from symfonic.core.contracts.readdressing import Readdressed, ReaddressKind

PAUSES: Final = logging.getLogger("symfonic.pauses")
FIELDS: Final = "symfonic"  # the ``extra`` key a line's fields are passed under
# Won claims remembered for their settle line; a turn that never settles (its
# worker died) is forgotten after this many newer claims.
CLAIMS_KEPT: Final = 4096


def pause_changed(state: str, why: str, **fields: str | int | None) -> None:
    """Log that a pause (or, from a sweep, several) moved to ``state``, and why."""
    if not PAUSES.isEnabledFor(logging.INFO):
        return
    known = {key: value for key, value in fields.items() if value is not None}
    subject = f"pause {known['pause_id']}" if "pause_id" in known else "pauses"
    who = f" by {known['principal']}" if "principal" in known else ""
    PAUSES.info(
        "%s %s%s: %s",
        subject,
        state,
        who,
        why,
        extra={FIELDS: {"event": f"pause.{state}", "state": state, "reason": why, **known}},
    )


class PauseLog:
    """The lines of the pause changes one store commits. A resumed turn settles by its
    claim's id: the claims won here are kept until then, so those lines name the pause."""

    def __init__(self) -> None:
        self._claimed: dict[str, str] = {}  # claim id -> pause id, oldest first

    def recorded(self, new: NewPause) -> None:
        pause = new.pause
        superseded = None if new.supersedes is None else self.settled(new.supersedes)
        pause_changed(
            "pending",
            "the turn stopped to ask a person"
            + ("" if new.supersedes is None else " again, superseding the pause it resumed"),
            pause_id=pause.pause_id,
            session_id=pause.session_id,
            agent=pause.agent,
            kind=pause.kind.value,
            owner=pause.principal,
            audience=pause.audience,
            supersedes=superseded,
        )

    def claimed(self, claim: Claim, claimed: ClaimedPause | None) -> None:
        if claimed is None:
            return
        self._claimed[claim.claim_id] = claim.pause_id
        if len(self._claimed) > CLAIMS_KEPT:
            del self._claimed[next(iter(self._claimed))]
        checkpoint = claimed.checkpoint
        pause_changed(
            "claimed",
            "an answer was accepted; the turn runs on",
            pause_id=claim.pause_id,
            principal=claim.principal,
            session_id=None if checkpoint is None else checkpoint.session_id,
        )

    def voted(self, ballot: Ballot, voted: VoteOutcome | None) -> None:
        if voted is None or voted.claimed is not None:
            self.claimed(ballot.claim, None if voted is None else voted.claimed)
            return
        if voted.already or voted.stale:
            return
        pause = voted.pause
        what = (
            "an approval was counted"
            if ballot.proposal is None
            else "the call was edited, a new proposal that only its editor has approved"
        )
        pause_changed(
            "approved",
            f"{what}, {len(pause.approvals)} of the "
            f"{pause.approvals_required} it needs; it waits for the rest",
            pause_id=pause.pause_id,
            principal=ballot.claim.principal,
            session_id=pause.session_id,
        )

    def published(self, session_id: str, claim_id: str, revision: int) -> None:
        pause_changed(
            "published",
            "the resumed turn finished and was published",
            pause_id=self.settled(claim_id),
            session_id=session_id,
            revision=revision,
        )

    def abandoned(self, session_id: str, claim_id: str, abandoned: bool) -> None:
        pause_id = self.settled(claim_id)
        if abandoned:
            pause_changed(
                "abandoned",
                "its resumed turn published nothing (it failed, or its client went away)",
                pause_id=pause_id,
                session_id=session_id,
            )

    def interrupted(self, session_id: str, interrupted: Interrupted | None) -> None:
        if interrupted is None or interrupted.abandoned_pause is None:
            return
        if interrupted.cancelled_run is not None:
            self.settled(interrupted.cancelled_run)  # a resume's run id is its claim's
        pause_changed(
            "abandoned",
            "its resumed turn was cancelled by a new message before it published",
            pause_id=interrupted.abandoned_pause,
            session_id=session_id,
        )

    def settled(self, claim_id: str) -> str | None:
        """The pause ``claim_id`` won, forgotten now that its turn settled."""
        return self._claimed.pop(claim_id, None)


def run_cancelled(pause_id: str, session_id: str) -> None:
    pause_changed(
        "abandoned",
        "its resumed turn's run was cancelled before it published",
        pause_id=pause_id,
        session_id=session_id,
    )


def pending_abandoned(session_id: str, count: int) -> None:
    if count:
        pause_changed(
            "abandoned",
            "a new turn was started on the session with on_pending_pause=abandon",
            session_id=session_id,
            count=count,
        )


def swept(report: SweepReport) -> None:
    """The sweep's expiries and lapsed claims (its escalations are `readdressed`'s)."""
    if report.expired:
        pause_changed("expired", "nobody answered before the pause's expiry", count=report.expired)
    if report.abandoned:
        pause_changed(
            "abandoned",
            "the worker resuming it stopped renewing its claim",
            count=report.abandoned,
        )


def readdressed(applied: Sequence[Readdressed]) -> None:
    """One line per pause handed to another audience: an escalation step or an
    operator's reassignment. Never the operator's reason: a person wrote it."""
    for moved in applied:
        done = moved.done
        if done.kind is ReaddressKind.ESCALATED:
            why = (
                f"nobody answered it {done.after or 0:g} s after it was asked, so it went "
                f"from {moved.previous} to {done.audience}"
            )
        else:
            why = f"an operator handed it from {moved.previous} to {done.audience}"
        pause_changed(
            done.kind.value,
            why,
            pause_id=moved.pause_id,
            session_id=moved.session_id,
            agent=moved.agent,
            previous=moved.previous,
            audience=done.audience,
            step=moved.step,
            principal=done.by,
        )


def trace_ids() -> dict[str, str]:
    """The current span's trace and span ids, hex as trace viewers show them."""
    span_context = trace.get_current_span().get_span_context()
    if not span_context.is_valid:
        return {}
    return {
        "trace_id": format(span_context.trace_id, "032x"),
        "span_id": format(span_context.span_id, "016x"),
    }


class JsonFormatter(logging.Formatter):
    """A log record as one JSON object on one line (``--log-format json``)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, FIELDS, None)
        if isinstance(fields, dict):
            line.update(fields)
        line.update(trace_ids())
        if record.exc_info and record.exc_info[0] is not None:
            line["error"] = record.exc_info[0].__name__
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)
