"""Pauses and their checkpoints: the storage role a resume goes through.

Every single-use transition (claim, publish, abandon) is one conditional statement whose
row count says who won.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from symfonic.core.contracts.readdressing import Readdressed, Readdressing
from symfonic.core.contracts.types import (
    Answer,
    AnswerStatus,
    Escalation,
    PauseQuestion,
    PauseState,
)
from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.core.messages import MessageBody


@dataclass(frozen=True)
class CheckpointRecord:
    """The in-flight turn of one pause: its messages, counters and base revision."""

    pause_id: str
    session_id: str
    format_version: int
    base_revision: int
    body: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class PauseRecord(PauseQuestion):
    """A pause as stored: its question, whose turn it paused, its state and its answer."""

    session_id: str
    principal: str
    agent: str
    audience: str | None
    base_revision: int
    state: PauseState
    created_at: datetime
    supersedes: str | None = None
    claim_id: str | None = None
    lease_until: datetime | None = None
    answered_by: str | None = None
    answered_at: datetime | None = None
    answer: Answer = None
    answer_status: AnswerStatus | None = None
    outcome: dict[str, Any] | None = None
    parent_session_id: str | None = None
    """Set on a delegate's own pause: the session whose pause stands for it. Such a
    pause is never listed nor answered by its token; the parent's pause is."""
    delegated_pause_id: str | None = None
    """Set on a parent's pause that stands for a delegate's: that pause's id."""
    edited_args_digest: str | None = None
    """For an approval answered with an edit: the digest of the edited call, written
    with the claim beside ``args_digest`` (what was asked), so the row shows both."""
    escalations: tuple[Escalation, ...] = ()
    """The pause's escalation chain; ``escalation_step`` of its steps are applied."""
    escalation_step: int = 0
    kept_audiences: tuple[str, ...] = ()
    """Who still answers besides ``audience``: scopes, and ``principal:<name>`` for an
    owner who kept access (`kept_owner`)."""
    readdressed: Readdressing | None = None
    """The latest escalation or reassignment, when there was one."""

    def answerable(self, now: datetime) -> bool:
        """Whether an answer sent at ``now`` may still claim this pause: it is pending
        and unexpired. A pending pause past its expiry is not, whether or not the
        sweeper has marked it expired yet; the claim's own statement says the same."""
        return self.state is PauseState.PENDING and self.expires_at > now


@dataclass(frozen=True)
class Claim:
    """What the winner of a claim writes: who answered, when, with what.

    The claim is made at ``at``: the pause must be unexpired then.
    """

    pause_id: str
    claim_id: str
    principal: str
    answer: Answer
    status: AnswerStatus
    at: datetime
    lease_until: datetime
    edited_args_digest: str | None = None


@dataclass(frozen=True)
class ClaimedPause:
    """What the winner of a claim needs to run the turn on, read as it claimed.

    ``checkpoint`` is ``None`` only when the pause's checkpoint is missing (a
    corrupt store); ``history`` is the session's committed history at the
    pause's base revision.
    """

    checkpoint: CheckpointRecord | None
    history: list[MessageBody]


@dataclass(frozen=True)
class NewPause:
    """A pending pause and its checkpoint, to be written together.

    ``run_id``: the first turn that paused; only the run still holding the
    session records it, clearing its marker. ``supersedes``: the claim of the
    resumed turn that paused again; its pause becomes ``superseded``.
    """

    pause: PauseRecord
    checkpoint: CheckpointRecord
    supersedes: str | None = None
    run_id: str | None = None


@dataclass(frozen=True)
class ResumePublish:
    """A resumed turn's messages and answer, to publish by the claim that holds its pause."""

    session_id: str
    claim_id: str
    messages: Sequence[MessageBody]
    answer: str


@dataclass(frozen=True)
class SweepReport:
    expired: int
    abandoned: int
    # Run markers cleared now by the cleanups their turns owed while the store
    # could not write (a marker another turn has since taken is not counted).
    runs_ended: int = 0
    # Pending pauses re-addressed by a step of their escalation chain, and each step.
    escalated: int = 0
    escalations: tuple[Readdressed, ...] = ()


class PauseStore(Protocol):
    """A pause's transitions, and reads of one pause or one session's."""

    async def record_pause(self, new: NewPause) -> None:
        """Write a pending pause and its checkpoint together, or nothing.

        Raises RevisionConflict when ``new.run_id`` no longer holds the session,
        PauseAbandoned when the claim ``new.supersedes`` names is no longer held.
        """
        ...

    async def get_pause(self, pause_id: str) -> PauseRecord | None: ...

    async def load_checkpoint(self, pause_id: str) -> CheckpointRecord | None: ...

    async def claim_pause(self, claim: Claim) -> ClaimedPause | None:
        """The single-use claim: pending and unexpired → claimed, one statement.

        ``None`` when the claim lost. The winner gets the pause's checkpoint and
        the history it continues, read in the same transaction as the claim.
        """
        ...

    async def claimed_pause(self, session_id: str, claim_id: str) -> PauseRecord | None:
        """The pause this claim took, in whatever state it is now."""
        ...

    async def renew_claim(self, session_id: str, claim_id: str, lease_until: datetime) -> bool: ...

    async def publish_resume(self, publish: ResumePublish) -> int:
        """Append a resumed turn at its pause's base revision and mark the pause published.

        Raises PauseAbandoned when the claim no longer holds, RevisionConflict
        when another turn was published first; either way nothing is written.
        """
        ...

    async def abandon_claim(
        self, session_id: str, claim_id: str, failure: FailedTurn | None = None
    ) -> bool:
        """Move this claim's pause to ``abandoned``; with ``failure``, owe ``turn.failed``
        in the same transaction. False if the pause had already left ``claimed``."""
        ...

    async def abandon_pending(self, session_id: str) -> int: ...

    async def open_pause(self, session_id: str) -> PauseRecord | None:
        """The session's pending or claimed pause, if any."""
        ...

    async def session_pauses(self, session_id: str) -> list[PauseRecord]:
        """Every pause of a session, oldest first: the audit trail."""
        ...

    async def sweep(self, now: datetime) -> SweepReport:
        """Expire stale pending pauses and abandon claims whose lease ran out.

        First, write the cleanups this worker's failed turns owe since the store
        could not write them (abandon their claims, clear their run markers), so
        their pauses and sessions take turns again.
        """
        ...
