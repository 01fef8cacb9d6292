"""The `symfonic.turn` and `symfonic.resume` spans around a turn's event stream, current only
while the turn itself runs, never while its consumer does (docs/design.md, telemetry).
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry import context, trace
from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from symfonic.core.contracts.errors import RequestError, SymfonicError
from symfonic.core.contracts.types import (
    ApprovalRecordedEvent,
    ErrorEvent,
    Event,
    ResponseCompleteEvent,
    TurnPausedEvent,
    TurnStartedEvent,
)
from symfonic.core.telemetry import instruments, names

RESUME_KEY: Final = context.create_key("symfonic.resume")
"""Where a resume's :class:`ResumeTrace` travels in the OpenTelemetry context."""

# A refusal's code, as the claim's result; the others keep their code.
_CLAIM_RESULTS: Final = {
    "pause_expired": "expired",
    "pause_abandoned": "abandoned",
    "pause_not_found": "not_found",
}

# A resume that found its pause taken by another request: it lost the race.
_CONFLICTS: Final = frozenset({"already_claimed", "already_answered"})


@dataclass
class ResumeTrace:
    """What a resume's store transactions tell its span while it runs.

    The claim is decided in the store: the traced store marks it won here (and
    links the resume span to the paused turn), so the stream knows a won claim
    from a replay of an answer already settled.
    """

    span: Span
    claim_won: bool = False
    pause_id: str | None = None
    replayed: bool = False
    """An approval by a principal already counted toward the pause's quorum."""


@dataclass
class _Outcome:
    outcome: str = "cancelled"
    error_code: str | None = None
    resumed: bool = False
    attributes: dict[str, AttributeValue] = field(default_factory=dict)


def _error_code(error: BaseException) -> str:
    return error.code if isinstance(error, SymfonicError) else "internal"


def _observe(span: Span, event: Event, seen: _Outcome, resume: ResumeTrace | None) -> None:
    if isinstance(event, TurnStartedEvent):
        span.set_attribute(names.SESSION_ID, event.session_id)
        if resume is not None:
            result = names.WON if resume.claim_won else names.REPLAY
            span.set_attribute(names.CLAIM_RESULT, result)
            seen.attributes[names.CLAIM_RESULT] = result
    elif isinstance(event, ApprovalRecordedEvent) and resume is not None:
        # Counted toward a quorum (or a replay of one counted already): the pause waits.
        seen.outcome = names.PAUSED
        result = names.REPLAY if resume.replayed else names.VOTED
        span.set_attribute(names.CLAIM_RESULT, result)
        seen.attributes[names.CLAIM_RESULT] = result
    elif isinstance(event, TurnPausedEvent):
        seen.outcome = names.PAUSED
        # A resume's own pause id is the one it answered; the new one is the next.
        span.set_attribute(
            names.PAUSE_ID if resume is None else names.NEXT_PAUSE_ID, event.pause_id
        )
        span.set_attribute(names.INTERACTION_KIND, event.kind.value)
    elif isinstance(event, ResponseCompleteEvent):
        seen.outcome = names.COMPLETE
    elif isinstance(event, ErrorEvent):
        seen.outcome, seen.error_code = names.FAILED, event.code


async def traced_turn(
    events: AsyncGenerator[Event, None],
    *,
    agent: str,
    principal: str,
    session_id: str | None = None,
    resume: bool = False,
    answer: str | None = None,
) -> AsyncGenerator[Event, None]:
    """``events`` inside a ``symfonic.turn`` (or ``symfonic.resume``) span.

    ``answer``: the person's answer as text, recorded only when the operator
    opted in; ``None`` (the default) records nothing of it.
    """
    attributes: dict[str, AttributeValue] = {names.AGENT: agent, names.PRINCIPAL: principal}
    if session_id is not None:
        attributes[names.SESSION_ID] = session_id
    if answer is not None:
        attributes[names.ANSWER_CONTENT] = answer
    span = instruments.TRACER.start_span(
        names.RESUME if resume else names.TURN, attributes=attributes
    )
    running = trace.set_span_in_context(span)
    tracked = ResumeTrace(span) if resume else None
    if tracked is not None:
        running = context.set_value(RESUME_KEY, tracked, running)
    seen = _Outcome(resumed=resume)
    started = time.perf_counter()
    try:
        while True:
            token = context.attach(running)
            try:
                event = await anext(events)
            except StopAsyncIteration:
                break
            finally:
                context.detach(token)
            _observe(span, event, seen, tracked)
            yield event
    except RequestError as error:
        seen.outcome, seen.error_code = names.REFUSED, error.code
        if tracked is not None:
            result = _CLAIM_RESULTS.get(error.code, error.code)
            span.set_attribute(names.CLAIM_RESULT, result)
            seen.attributes[names.CLAIM_RESULT] = result
        raise
    except Exception as error:
        seen.outcome, seen.error_code = names.FAILED, _error_code(error)
        raise
    finally:
        token = context.attach(running)
        try:
            await events.aclose()
        finally:
            context.detach(token)
            _end(span, seen, agent, time.perf_counter() - started)


def _end(span: Span, seen: _Outcome, agent: str, elapsed: float) -> None:
    span.set_attribute(names.OUTCOME, seen.outcome)
    labels: dict[str, AttributeValue] = {
        names.AGENT: agent,
        names.OUTCOME: seen.outcome,
        names.RESUMED: seen.resumed,
    }
    if seen.error_code is not None:
        span.set_attribute(names.ERROR_CODE, seen.error_code)
        labels[names.ERROR_CODE] = seen.error_code
    if seen.outcome in (names.FAILED, names.REFUSED):
        # The code only: an error's message may quote a provider or a driver.
        span.set_status(Status(StatusCode.ERROR, seen.error_code))
    span.end()
    instruments.TURN_DURATION.record(elapsed, labels)
    if seen.resumed:
        result = seen.attributes.get(names.CLAIM_RESULT, seen.outcome)
        instruments.RESUMES.add(1, {names.AGENT: agent, names.CLAIM_RESULT: result})
        if result in _CONFLICTS:
            instruments.CLAIM_CONFLICTS.add(1, {names.AGENT: agent, names.CLAIM_RESULT: result})


def current_resume() -> ResumeTrace | None:
    """The resume this store transaction runs for, if any."""
    found: Any = context.get_value(RESUME_KEY)
    return found if isinstance(found, ResumeTrace) else None
