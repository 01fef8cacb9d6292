"""One structured log line per pause state change, and the JSON form of any line.

Each line says who (the principal), what (the pause, its session, its new
state) and why, as words in the message and as fields for a machine: the
fields travel in ``extra`` under :data:`FIELDS`, and :class:`JsonFormatter`
writes them, with the trace and span ids of the span current when the line
was written, so a log line leads to its trace. Nothing a person wrote, no
token and no key is ever a field: only ids, names and counts.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any, Final

from opentelemetry import trace

PAUSES: Final = logging.getLogger("symfonic.pauses")
FIELDS: Final = "symfonic"
"""The ``extra`` key a line's structured fields are passed under."""


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
