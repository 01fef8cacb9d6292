"""The store port, traced: one span per transaction, the pause's trace context kept.

:class:`TracedStore` wraps the store an agent opens, so the adapters know
nothing of telemetry. Every call is a span (``symfonic.store.<operation>``);
the calls that change a pause have the lifecycle's own names
(``symfonic.pause``, ``symfonic.claim``, ``symfonic.publish``,
``symfonic.abandon``) and count what the metrics count; the other operations
are plain spans (:mod:`symfonic.core.telemetry.store_roles`). It wraps the
logging store (:mod:`symfonic.core.telemetry.logged_store`), which writes the
pause log lines with or without an SDK, inside these spans.
Transactions outside any trace (the sweeper's, a background count) get no span;
an escalation step or a reassignment they apply gets its own
(:mod:`symfonic.core.telemetry.readdressing`).

Linking a resume to the turn that paused: the pause's checkpoint is written in
the same transaction as the pause, so the paused turn's W3C ``traceparent``
(and when and by which agent the pause was made) is added to the checkpoint's
body under :data:`TELEMETRY_KEY`. The readers of a checkpoint ignore keys they
do not know, and a checkpoint without it (written with no SDK, or before this)
simply links to nothing. The claim reads it back in its own transaction and
links the resume span to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Final

from opentelemetry import trace
from opentelemetry.trace import Span, SpanContext
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from symfonic.core.contracts.approvals import Ballot, VoteOutcome
from symfonic.core.contracts.errors import StoreUnavailable
from symfonic.core.contracts.pauses import (
    CheckpointRecord,
    Claim,
    ClaimedPause,
    NewPause,
    PauseRecord,
    ResumePublish,
    SweepReport,
)
from symfonic.core.contracts.readdressing import Readdressed, Reassignment
from symfonic.core.contracts.sessions import TurnPublish
from symfonic.core.contracts.store import Store
from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.core.telemetry import instruments, names
from symfonic.core.telemetry.logged_store import LoggedStore
from symfonic.core.telemetry.readdressing import record_readdressed
from symfonic.core.telemetry.store_roles import TracedRoles, counting, in_span, transaction_span
from symfonic.core.telemetry.turns import current_resume

TELEMETRY_KEY: Final = "telemetry"
_PROPAGATOR: Final = TraceContextTextMapPropagator()


def observed(store: Store, *, recording: bool) -> Store:
    """``store`` with its pause log lines, and every transaction traced when an SDK is
    ``recording``. A store an agent already opened this way (a server's agents share
    one) is returned as is, so no line or span is written twice."""
    if isinstance(store, (LoggedStore, TracedStore)):
        return store
    logged = LoggedStore(store)
    return TracedStore(logged) if recording else logged


def paused_turn_link(body: Mapping[str, Any]) -> SpanContext | None:
    """The span context of the turn that recorded this checkpoint, if it was traced."""
    kept = body.get(TELEMETRY_KEY)
    if not isinstance(kept, Mapping) or "traceparent" not in kept:
        return None
    carrier = {"traceparent": str(kept["traceparent"])}
    span_context = trace.get_current_span(_PROPAGATOR.extract(carrier)).get_span_context()
    return span_context if span_context.is_valid else None


class TracedStore(TracedRoles):
    """The :class:`~symfonic.core.contracts.store.Store` port with spans around it.

    The operations that change a pause are here, under the lifecycle's span
    names, with their counts; every other operation is a plain span
    (:class:`~symfonic.core.telemetry.store_roles.TracedRoles`).
    """

    # The operations that change a pause -----------------------------------

    async def record_pause(self, new: NewPause) -> None:
        pause, checkpoint = new.pause, new.checkpoint
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)  # the turn's context: the pause span is not open yet
        kept = {**carrier, "paused_at": pause.created_at.isoformat(), "agent": pause.agent}
        body = {**checkpoint.body, TELEMETRY_KEY: kept}
        attributes = _pause_attributes(pause)
        await in_span(
            names.PAUSE,
            "record_pause",
            self._store.record_pause(replace(new, checkpoint=replace(checkpoint, body=body))),
            attributes,
        )

    async def claim_pause(self, claim: Claim) -> ClaimedPause | None:
        with transaction_span(names.CLAIM, "claim_pause", _claim_attributes(claim)) as span:
            claimed = await counting(self._store.claim_pause(claim), "claim_pause")
            if claimed is None:
                # The resume then says why (already claimed, a replay): counted there.
                span.set_attribute(names.CLAIM_RESULT, names.LOST)
                return None
            _won(span, claim, claimed.checkpoint)
            return claimed

    async def vote_pause(self, ballot: Ballot) -> VoteOutcome | None:
        claim = ballot.claim
        with transaction_span(names.CLAIM, "vote_pause", _claim_attributes(claim)) as span:
            voted = await counting(self._store.vote_pause(ballot), "vote_pause")
            if voted is None or voted.stale:
                span.set_attribute(names.CLAIM_RESULT, names.LOST)
                return voted
            _voted(span, ballot, voted)
            if voted.claimed is not None:
                _won(span, claim, voted.claimed.checkpoint)
            else:
                span.set_attribute(
                    names.CLAIM_RESULT, names.REPLAY if voted.already else names.VOTED
                )
            return voted

    async def publish_resume(self, publish: ResumePublish) -> int:
        session_id = publish.session_id
        pause_id = _resumed_pause()
        return await in_span(
            names.PUBLISH,
            "publish_resume",
            self._store.publish_resume(publish),
            _known({names.SESSION_ID: session_id, names.PAUSE_ID: pause_id}),
        )

    async def publish_turn(self, publish: TurnPublish) -> int:
        return await in_span(
            names.PUBLISH,
            "publish_turn",
            self._store.publish_turn(publish),
            {names.SESSION_ID: publish.session_id},
        )

    async def abandon_claim(
        self, session_id: str, claim_id: str, failure: FailedTurn | None = None
    ) -> bool:
        pause_id = _resumed_pause()
        return await in_span(
            names.ABANDON,
            "abandon_claim",
            self._store.abandon_claim(session_id, claim_id, failure),
            _known({names.SESSION_ID: session_id, names.PAUSE_ID: pause_id}),
        )

    async def abandon_pending(self, session_id: str) -> int:
        return await in_span(
            names.ABANDON,
            "abandon_pending",
            self._store.abandon_pending(session_id),
            {names.SESSION_ID: session_id},
        )

    async def sweep(self, now: datetime) -> SweepReport:
        report = await in_span(names.STORE_PREFIX + "sweep", "sweep", self._store.sweep(now))
        await self._readdressed(report.escalations)
        if report.escalated:
            instruments.SWEEPER_ACTIONS.add(report.escalated, {names.SWEEP_ACTION: "escalated"})
        if report.expired:
            instruments.SWEEPER_ACTIONS.add(report.expired, {names.SWEEP_ACTION: "expired"})
        if report.abandoned:
            instruments.SWEEPER_ACTIONS.add(report.abandoned, {names.SWEEP_ACTION: "abandoned"})
        return report

    async def escalate_due(self, now: datetime) -> list[Readdressed]:
        applied = await in_span(
            names.STORE_PREFIX + "escalate_due", "escalate_due", self._store.escalate_due(now)
        )
        await self._readdressed(applied)
        return applied

    async def reassign_pause(self, reassignment: Reassignment) -> Readdressed | None:
        moved = await in_span(
            names.STORE_PREFIX + "reassign_pause",
            "reassign_pause",
            self._store.reassign_pause(reassignment),
        )
        if moved is not None:
            await self._readdressed([moved])
        return moved

    async def _readdressed(self, applied: Sequence[Readdressed]) -> None:
        """A span for each pause handed to another audience, linked to the turn that
        paused it. Its link is read after the change committed: a store out of reach
        then costs the link, never the change or the span."""
        for moved in applied:
            try:
                checkpoint = await self._store.load_checkpoint(moved.pause_id)
            except StoreUnavailable:
                checkpoint = None
            paused = None if checkpoint is None else paused_turn_link(checkpoint.body)
            record_readdressed(moved, paused)


def _resumed_pause() -> str | None:
    """The pause the resume running this transaction claimed, if it is known."""
    resume = current_resume()
    return None if resume is None else resume.pause_id


def _known(values: Mapping[str, str | None]) -> dict[str, str]:
    return {key: value for key, value in values.items() if value is not None}


def _pause_attributes(pause: PauseRecord) -> dict[str, Any]:
    return {
        names.PAUSE_ID: pause.pause_id,
        names.SESSION_ID: pause.session_id,
        names.AGENT: pause.agent,
        names.PRINCIPAL: pause.principal,
        names.INTERACTION_KIND: pause.kind.value,
    }


def _claim_attributes(claim: Claim) -> dict[str, Any]:
    # Never the answer: only who claimed which pause.
    return {names.PAUSE_ID: claim.pause_id, names.PRINCIPAL: claim.principal}


def _voted(span: Span, ballot: Ballot, voted: VoteOutcome) -> None:
    """Where the vote stands, on the vote's span and its resume's; a counted vote counted.

    A replay (the principal was counted already) says where the vote stands too,
    and counts nothing.
    """
    pause = voted.pause
    stands: dict[str, Any] = {
        names.APPROVALS: len(pause.approvals),
        names.APPROVALS_REQUIRED: pause.approvals_required,
    }
    resume = current_resume()
    for each in (span, None if resume is None else resume.span):
        if each is not None:
            each.set_attributes(stands)
    if resume is not None and voted.already:
        resume.replayed = True
    if not voted.already:
        decision = "approve" if ballot.proposal is None else "edit"
        labels = {names.AGENT: pause.agent, names.APPROVAL_DECISION: decision}
        instruments.APPROVALS_COUNTED.add(1, labels)


def _won(span: Span, claim: Claim, checkpoint: CheckpointRecord | None) -> None:
    """A won claim: link to the paused turn, time the answer, tell the resume."""
    span.set_attribute(names.CLAIM_RESULT, names.WON)
    body: Mapping[str, Any] = {} if checkpoint is None else checkpoint.body
    kept = body.get(TELEMETRY_KEY)
    paused = paused_turn_link(body)
    resume = current_resume()
    if resume is not None:
        resume.claim_won, resume.pause_id = True, claim.pause_id
        resume.span.set_attribute(names.PAUSE_ID, claim.pause_id)
    if paused is not None:
        span.add_link(paused)
        if resume is not None:
            resume.span.add_link(paused)
    interaction = body.get("interaction")
    kind = str(interaction.get("kind")) if isinstance(interaction, Mapping) else None
    if kind is not None:
        span.set_attribute(names.INTERACTION_KIND, kind)
        if resume is not None:
            resume.span.set_attribute(names.INTERACTION_KIND, kind)
    if isinstance(kept, Mapping) and "paused_at" in kept:
        waited = (claim.at - datetime.fromisoformat(str(kept["paused_at"]))).total_seconds()
        labels = {names.AGENT: str(kept.get("agent", "")), names.INTERACTION_KIND: kind or ""}
        instruments.TIME_TO_ANSWER.record(max(waited, 0.0), labels)
