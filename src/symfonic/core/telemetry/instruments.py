"""The tracer and the metric instruments, from the OpenTelemetry API: proxies that do nothing
until an SDK is installed. Metric labels are low-cardinality, never what a person wrote.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Final

from opentelemetry import metrics, trace

# The API's stand-in until an SDK's provider is set; it has no public name.
from opentelemetry.metrics._internal import _ProxyMeterProvider
from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from symfonic.core.telemetry import names


def recording() -> bool:
    """Whether an SDK is recording traces or metrics in this process.

    Without one, every span and measurement would be a no-op. An agent asks once,
    when it opens, and its turns, store and kernel then skip their telemetry
    altogether (the answer reads the environment, too dear to ask on every call).
    """
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider) or not (
        isinstance(metrics.get_meter_provider(), _ProxyMeterProvider)
    )


TRACER: Final = trace.get_tracer(names.INSTRUMENTATION)
METER: Final = metrics.get_meter(names.INSTRUMENTATION)

TURN_DURATION: Final = METER.create_histogram(
    names.TURN_DURATION, unit="s", description="How long a turn, first or resumed, ran"
)
MODEL_CALL_DURATION: Final = METER.create_histogram(
    names.MODEL_CALL_DURATION, unit="s", description="How long one model call took"
)
TOKEN_USAGE: Final = METER.create_histogram(
    names.TOKEN_USAGE, unit="{token}", description="Tokens a model call reported using"
)
TOOL_CALL_DURATION: Final = METER.create_histogram(
    names.TOOL_CALL_DURATION, unit="s", description="How long one tool call took"
)
TIME_TO_ANSWER: Final = METER.create_histogram(
    names.TIME_TO_ANSWER,
    unit="s",
    description="From a pause being recorded to its answer being accepted (the claim)",
)
RESUMES: Final = METER.create_counter(
    names.RESUMES, unit="{resume}", description="Resume requests, by how the claim ended"
)
APPROVALS_COUNTED: Final = METER.create_counter(
    names.APPROVALS_COUNTED,
    unit="{approval}",
    description="Approvals counted toward a pause that needs several, the last one included "
    "(a replay or a stale approval is not counted)",
)
CLAIM_CONFLICTS: Final = METER.create_counter(
    names.CLAIM_CONFLICTS,
    unit="{claim}",
    description="Resumes refused because another request had claimed the pause first",
)
SWEEPER_ACTIONS: Final = METER.create_counter(
    names.SWEEPER_ACTIONS,
    unit="{pause}",
    description="Pauses the sweeper moved: expired pending ones, abandoned lapsed claims",
)
STORE_UNAVAILABLE: Final = METER.create_counter(
    names.STORE_UNAVAILABLE,
    unit="{error}",
    description="Store transactions that failed because the store was out of reach",
)


@contextmanager
def span(
    name: str, attributes: Mapping[str, AttributeValue] | None = None, *, recording: bool
) -> Iterator[Span]:
    """``name``, current while the block runs (if ``recording``). A failure sets the span's
    status to the error's type, never its message, which may quote a driver or a provider."""
    if not recording:
        yield trace.INVALID_SPAN
        return
    with TRACER.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as current:
        try:
            yield current
        except BaseException as error:
            current.set_status(Status(StatusCode.ERROR, type(error).__name__))
            raise
