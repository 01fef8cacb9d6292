"""A pause handed to another audience (an escalation step, a reassignment) as a short span of
its own, linked to the turn that paused, wherever it happens (docs/design.md, telemetry).
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import Link, SpanContext

from symfonic.core.contracts.readdressing import Readdressed, ReaddressKind
from symfonic.core.telemetry import instruments, names

SPAN_OF = {ReaddressKind.ESCALATED: names.ESCALATE, ReaddressKind.REASSIGNED: names.REASSIGN}


def readdressed_attributes(moved: Readdressed) -> dict[str, Any]:
    """The span's attributes: ids and audience names, never anything a person wrote."""
    done = moved.done
    attributes: dict[str, Any] = {
        names.PAUSE_ID: moved.pause_id,
        names.SESSION_ID: moved.session_id,
        names.AGENT: moved.agent,
        names.AUDIENCE_FROM: moved.previous,
        names.AUDIENCE_TO: done.audience,
    }
    if moved.step is not None:
        attributes[names.ESCALATION_STEP] = moved.step
    if done.after is not None:
        attributes[names.ESCALATION_AFTER] = done.after
    if done.by is not None:
        attributes[names.PRINCIPAL] = done.by
    return attributes


def record_readdressed(moved: Readdressed, paused: SpanContext | None) -> None:
    """One ``symfonic.escalate`` or ``symfonic.reassign`` span for ``moved``, already
    applied, linked to ``paused``: the span of the turn that paused, when known."""
    links = [] if paused is None else [Link(paused)]
    name = SPAN_OF[moved.done.kind]
    with instruments.TRACER.start_as_current_span(
        name, attributes=readdressed_attributes(moved), links=links
    ):
        pass
