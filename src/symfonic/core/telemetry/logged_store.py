"""The store port with a pause log line for each change it commits, with or without an SDK.

:class:`LoggedStore` wraps every store an agent opens, whether or not an
OpenTelemetry SDK records (the traced store, when one does, wraps this one), so
an operator reads a pause's life in the ``symfonic.pauses`` log whatever is
installed. It is the one place each line is written: a line follows the
transaction that made the change, and only when the change was made here (a
claim won, a publish committed, the escalation steps and reassignments this
worker's update applied), so a change is logged once across any number of
workers. The lines' words and fields are :func:`~symfonic.core.telemetry.logs.pause_changed`'s.

A resumed turn publishes or abandons by its claim's id, which the pause's id
is not part of: the claims this wrapper saw won are kept until their turn
settles, so those lines name the pause, at most :data:`CLAIMS_KEPT` of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

from symfonic.core.contracts.approvals import Ballot, VoteOutcome
from symfonic.core.contracts.interrupts import Interrupted
from symfonic.core.contracts.pauses import Claim, ClaimedPause, NewPause, ResumePublish, SweepReport
from symfonic.core.contracts.readdressing import Readdressed, ReaddressKind, Reassignment
from symfonic.core.contracts.sessions import RunRequest, TurnPublish
from symfonic.core.contracts.store import Store
from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.core.telemetry import logs
from symfonic.core.telemetry.store_roles import StoreRoles

CLAIMS_KEPT: Final = 4096
"""Won claims remembered for their settle line; a turn that never settles (its
worker died) is forgotten after this many newer claims."""


class LoggedStore(StoreRoles):
    """The :class:`~symfonic.core.contracts.store.Store` port, each pause change logged."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._claimed: dict[str, str] = {}  # claim id -> pause id, oldest first

    async def record_pause(self, new: NewPause) -> None:
        await self._store.record_pause(new)
        pause = new.pause
        superseded = None if new.supersedes is None else self._settled(new.supersedes)
        logs.pause_changed(
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

    async def claim_pause(self, claim: Claim) -> ClaimedPause | None:
        claimed = await self._store.claim_pause(claim)
        if claimed is not None:
            self._won(claim, claimed)
        return claimed

    async def vote_pause(self, ballot: Ballot) -> VoteOutcome | None:
        voted = await self._store.vote_pause(ballot)
        claim = ballot.claim
        if voted is not None and voted.claimed is not None:
            self._won(claim, voted.claimed)
        elif voted is not None and not (voted.already or voted.stale):
            pause = voted.pause
            what = (
                "an approval was counted"
                if ballot.proposal is None
                else ("the call was edited, a new proposal that only its editor has approved")
            )
            logs.pause_changed(
                "approved",
                f"{what}, {len(pause.approvals)} of the "
                f"{pause.approvals_required} it needs; it waits for the rest",
                pause_id=pause.pause_id,
                principal=claim.principal,
                session_id=pause.session_id,
            )
        return voted

    def _won(self, claim: Claim, claimed: ClaimedPause) -> None:
        """A claim this process won: logged, and kept until its turn settles."""
        self._claimed[claim.claim_id] = claim.pause_id
        if len(self._claimed) > CLAIMS_KEPT:
            del self._claimed[next(iter(self._claimed))]
        checkpoint = claimed.checkpoint
        logs.pause_changed(
            "claimed",
            "an answer was accepted; the turn runs on",
            pause_id=claim.pause_id,
            principal=claim.principal,
            session_id=None if checkpoint is None else checkpoint.session_id,
        )

    async def publish_resume(self, publish: ResumePublish) -> int:
        revision = await self._store.publish_resume(publish)
        logs.pause_changed(
            "published",
            "the resumed turn finished and was published",
            pause_id=self._settled(publish.claim_id),
            session_id=publish.session_id,
            revision=revision,
        )
        return revision

    async def publish_turn(self, publish: TurnPublish) -> int:
        return await self._store.publish_turn(publish)

    async def abandon_claim(
        self, session_id: str, claim_id: str, failure: FailedTurn | None = None
    ) -> bool:
        abandoned = await self._store.abandon_claim(session_id, claim_id, failure)
        pause_id = self._settled(claim_id)
        if abandoned:
            logs.pause_changed(
                "abandoned",
                "its resumed turn published nothing (it failed, or its client went away)",
                pause_id=pause_id,
                session_id=session_id,
            )
        return abandoned

    async def cancel_run(self, run_id: str, at: datetime) -> bool:
        cancelled = await self._store.cancel_run(run_id, at)
        self._settled(run_id)  # a resume's run id is its claim's
        if cancelled:
            run = await self._store.run_record(run_id)
            if run is not None and run.pause_id is not None:
                logs.pause_changed(
                    "abandoned",
                    "its resumed turn's run was cancelled before it published",
                    pause_id=run.pause_id,
                    session_id=run.session_id,
                )
        return cancelled

    async def interrupt_turn(self, request: RunRequest, *, forget: bool) -> Interrupted | None:
        interrupted = await self._store.interrupt_turn(request, forget=forget)
        if interrupted is not None and interrupted.abandoned_pause is not None:
            if interrupted.cancelled_run is not None:
                self._settled(interrupted.cancelled_run)  # the claim's id
            logs.pause_changed(
                "abandoned",
                "its resumed turn was cancelled by a new message before it published",
                pause_id=interrupted.abandoned_pause,
                session_id=request.session_id,
            )
        return interrupted

    async def abandon_pending(self, session_id: str) -> int:
        count = await self._store.abandon_pending(session_id)
        if count:
            logs.pause_changed(
                "abandoned",
                "a new turn was started on the session with on_pending_pause=abandon",
                session_id=session_id,
                count=count,
            )
        return count

    async def sweep(self, now: datetime) -> SweepReport:
        report = await self._store.sweep(now)
        _log_readdressed(report.escalations)
        if report.expired:
            logs.pause_changed(
                "expired", "nobody answered before the pause's expiry", count=report.expired
            )
        if report.abandoned:
            logs.pause_changed(
                "abandoned",
                "the worker resuming it stopped renewing its claim",
                count=report.abandoned,
            )
        return report

    async def escalate_due(self, now: datetime) -> list[Readdressed]:
        applied = await self._store.escalate_due(now)
        _log_readdressed(applied)
        return applied

    async def reassign_pause(self, reassignment: Reassignment) -> Readdressed | None:
        moved = await self._store.reassign_pause(reassignment)
        if moved is not None:
            _log_readdressed([moved])
        return moved

    def _settled(self, claim_id: str) -> str | None:
        """The pause ``claim_id`` won, forgotten now that its turn settled."""
        return self._claimed.pop(claim_id, None)


def _log_readdressed(applied: Sequence[Readdressed]) -> None:
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
        logs.pause_changed(
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
