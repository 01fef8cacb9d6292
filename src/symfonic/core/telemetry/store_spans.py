"""The store's spans: one per transaction inside a trace, named by the operation it serves.

A paused turn's W3C ``traceparent`` is kept in its checkpoint's body under
`TELEMETRY_KEY`, so the claim that resumes it, in another trace, links back to it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Final, TypeVar

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
    SweepReport,
)
from symfonic.core.contracts.readdressing import Readdressed
from symfonic.core.telemetry import instruments, names
from symfonic.core.telemetry.readdressing import record_readdressed
from symfonic.core.telemetry.turns import current_resume

T = TypeVar("T")
Then = Callable[[Span, T], None]

TELEMETRY_KEY: Final = "telemetry"
_PROPAGATOR: Final = TraceContextTextMapPropagator()
# The operations that change a pause carry the lifecycle's span names.
_SPAN_OF: Final = {
    "record_pause": names.PAUSE,
    "claim_pause": names.CLAIM,
    "vote_pause": names.CLAIM,
    "publish_resume": names.PUBLISH,
    "publish_turn": names.PUBLISH,
    "abandon_claim": names.ABANDON,
    "abandon_pending": names.ABANDON,
}


async def traced(
    operation: str,
    run: Callable[[], Awaitable[T]],
    attributes: Mapping[str, Any] | None = None,
    then: Then[T] | None = None,
) -> T:
    """``run()`` in its span, if a trace is current (the sweeper's and the gauge's polls
    would otherwise start a trace each every few seconds); a store out of reach counted."""
    if trace.get_current_span().get_span_context().is_valid:
        name = _SPAN_OF.get(operation, names.STORE_PREFIX + operation)
        opened = {names.STORE_OPERATION: operation, **(attributes or {})}
        with instruments.span(name, opened, recording=True) as span:
            return _then(await _counted(operation, run), span, then)
    return _then(await _counted(operation, run), trace.INVALID_SPAN, then)


async def _counted(operation: str, run: Callable[[], Awaitable[T]]) -> T:
    try:
        return await run()
    except StoreUnavailable:
        instruments.STORE_UNAVAILABLE.add(1, {names.STORE_OPERATION: operation})
        raise


def _then(value: T, span: Span, then: Then[T] | None) -> T:
    if then is not None:
        then(span, value)
    return value


def with_trace(new: NewPause) -> NewPause:
    """``new`` with the pausing turn's context in its checkpoint, for the resume to link to."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    pause, checkpoint = new.pause, new.checkpoint
    kept = {**carrier, "paused_at": pause.created_at.isoformat(), "agent": pause.agent}
    body = {**checkpoint.body, TELEMETRY_KEY: kept}
    return replace(new, checkpoint=replace(checkpoint, body=body))


def paused_turn_link(body: Mapping[str, Any]) -> SpanContext | None:
    """The span context of the turn that recorded this checkpoint, if it was traced."""
    kept = body.get(TELEMETRY_KEY)
    if not isinstance(kept, Mapping) or "traceparent" not in kept:
        return None
    carrier = {"traceparent": str(kept["traceparent"])}
    span_context = trace.get_current_span(_PROPAGATOR.extract(carrier)).get_span_context()
    return span_context if span_context.is_valid else None


def pause_attributes(new: NewPause) -> dict[str, Any]:
    pause = new.pause
    return {
        names.PAUSE_ID: pause.pause_id,
        names.SESSION_ID: pause.session_id,
        names.AGENT: pause.agent,
        names.PRINCIPAL: pause.principal,
        names.INTERACTION_KIND: pause.kind.value,
    }


def claim_attributes(claim: Claim) -> dict[str, Any]:
    # Never the answer: only who claimed which pause.
    return {names.PAUSE_ID: claim.pause_id, names.PRINCIPAL: claim.principal}


def settle_attributes(session_id: str) -> dict[str, Any]:
    """A publish's or abandon's: its session, and the pause its resume claimed if known."""
    resume = current_resume()
    if resume is None or resume.pause_id is None:
        return {names.SESSION_ID: session_id}
    return {names.SESSION_ID: session_id, names.PAUSE_ID: resume.pause_id}


def claimed(claim: Claim) -> Then[ClaimedPause | None]:
    def result(span: Span, claimed: ClaimedPause | None) -> None:
        if claimed is None:
            # The resume then says why (already claimed, a replay): counted there.
            span.set_attribute(names.CLAIM_RESULT, names.LOST)
        else:
            _won(span, claim, claimed.checkpoint)

    return result


def voted(ballot: Ballot) -> Then[VoteOutcome | None]:
    def result(span: Span, voted: VoteOutcome | None) -> None:
        if voted is None or voted.stale:
            span.set_attribute(names.CLAIM_RESULT, names.LOST)
            return
        _stands(span, ballot, voted)
        if voted.claimed is not None:
            _won(span, ballot.claim, voted.claimed.checkpoint)
        else:
            span.set_attribute(names.CLAIM_RESULT, names.REPLAY if voted.already else names.VOTED)

    return result


def _stands(span: Span, ballot: Ballot, voted: VoteOutcome) -> None:
    """Where the vote stands, on the vote's span and its resume's; a counted vote counted.
    A replay (the principal was counted already) says where it stands and counts nothing."""
    pause = voted.pause
    stands = {
        names.APPROVALS: len(pause.approvals),
        names.APPROVALS_REQUIRED: pause.approvals_required,
    }
    span.set_attributes(stands)
    resume = current_resume()
    if resume is not None:
        resume.span.set_attributes(stands)
        resume.replayed = resume.replayed or voted.already
    if not voted.already:
        decision = "approve" if ballot.proposal is None else "edit"
        labels = {names.AGENT: pause.agent, names.APPROVAL_DECISION: decision}
        instruments.APPROVALS_COUNTED.add(1, labels)


def _won(span: Span, claim: Claim, checkpoint: CheckpointRecord | None) -> None:
    """A won claim: link to the paused turn, time the answer, tell the resume."""
    span.set_attribute(names.CLAIM_RESULT, names.WON)
    body: Mapping[str, Any] = {} if checkpoint is None else checkpoint.body
    paused = paused_turn_link(body)
    resume = current_resume()
    spans = [span] if resume is None else [span, resume.span]
    if resume is not None:
        resume.claim_won, resume.pause_id = True, claim.pause_id
        resume.span.set_attribute(names.PAUSE_ID, claim.pause_id)
    interaction = body.get("interaction")
    kind = str(interaction.get("kind")) if isinstance(interaction, Mapping) else None
    for each in spans:
        if paused is not None:
            each.add_link(paused)
        if kind is not None:
            each.set_attribute(names.INTERACTION_KIND, kind)
    kept = body.get(TELEMETRY_KEY)
    if isinstance(kept, Mapping) and "paused_at" in kept:
        waited = (claim.at - datetime.fromisoformat(str(kept["paused_at"]))).total_seconds()
        labels = {names.AGENT: str(kept.get("agent", "")), names.INTERACTION_KIND: kind or ""}
        instruments.TIME_TO_ANSWER.record(max(waited, 0.0), labels)


def swept(report: SweepReport) -> None:
    """The sweeper's moves, counted by what it did."""
    moved = (("escalated", report.escalated), ("expired", report.expired))
    for action, count in (*moved, ("abandoned", report.abandoned)):
        if count:
            instruments.SWEEPER_ACTIONS.add(count, {names.SWEEP_ACTION: action})


async def readdressed(
    applied: Sequence[Readdressed],
    checkpoint: Callable[[str], Awaitable[CheckpointRecord | None]],
) -> None:
    """A span for each pause handed to another audience, linked to the turn that paused
    it. The link is read after the change committed: a store out of reach then costs the
    link, never the change or the span."""
    for moved in applied:
        try:
            kept = await checkpoint(moved.pause_id)
        except StoreUnavailable:
            kept = None
        record_readdressed(moved, None if kept is None else paused_turn_link(kept.body))
