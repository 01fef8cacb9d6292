"""Spans for the calls a turn makes: one per model call, one per tool call, in the GenAI
semantic conventions, never with what is sent or returned (docs/design.md, telemetry).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from symfonic.core.telemetry import instruments, names


def model_name(model: object) -> str | None:
    """The model a chat model object calls, as its provider names it, if it says."""
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return None


def provider_name(model: object) -> str:
    """``openai`` for ``langchain_openai``'s models, and so on; else the package's name."""
    package = type(model).__module__.split(".")[0]
    return package.removeprefix("langchain_")


class ModelCall:
    """One model call's span: told the reply when it has one."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def replied(self, usage: Mapping[str, Any] | None) -> None:
        """Record the token usage the model reported, if it reported any."""
        if not usage:
            return
        for key, attribute in (
            ("input_tokens", names.GEN_AI_INPUT_TOKENS),
            ("output_tokens", names.GEN_AI_OUTPUT_TOKENS),
        ):
            count = usage.get(key)
            if isinstance(count, int):
                self.span.set_attribute(attribute, count)


@contextmanager
def model_call(model: object, *, recording: bool) -> Iterator[ModelCall]:
    """A ``chat {model}`` span around one model call, and its duration measured
    (if ``recording``)."""
    if not recording:
        yield ModelCall(INVALID_SPAN)
        return
    requested = model_name(model)
    labels: dict[str, AttributeValue] = {
        names.GEN_AI_OPERATION: names.GEN_AI_CHAT,
        names.GEN_AI_PROVIDER: provider_name(model),
    }
    if requested is not None:
        labels[names.GEN_AI_REQUEST_MODEL] = requested
    title = names.GEN_AI_CHAT if requested is None else f"{names.GEN_AI_CHAT} {requested}"
    span = instruments.TRACER.start_span(title, kind=SpanKind.CLIENT, attributes=labels)
    started = time.perf_counter()
    try:
        yield ModelCall(span)
    except BaseException as error:
        labels["error.type"] = type(error).__name__
        span.set_attribute("error.type", type(error).__name__)
        span.set_status(Status(StatusCode.ERROR, type(error).__name__))
        raise
    finally:
        span.end()
        instruments.MODEL_CALL_DURATION.record(time.perf_counter() - started, labels)


class ToolCall:
    """One tool call's span: told whether the observation was a success."""

    def __init__(self, span: Span) -> None:
        self.span = span
        self.status = "error"  # until told otherwise: a tool that raised

    def observed(self, ok: bool) -> None:
        self.status = "ok" if ok else "error"
        self.span.set_attribute(names.TOOL_STATUS, self.status)
        if not ok:
            self.span.set_status(Status(StatusCode.ERROR, "tool_error"))


@contextmanager
def tool_call(name: str, call_id: str, *, recording: bool) -> Iterator[ToolCall]:
    """An ``execute_tool {name}`` span, current while the tool runs (if ``recording``)."""
    if not recording:
        yield ToolCall(INVALID_SPAN)
        return
    attributes: dict[str, AttributeValue] = {
        names.GEN_AI_OPERATION: names.GEN_AI_EXECUTE_TOOL,
        names.TOOL_NAME: name,
        names.TOOL_CALL_ID: call_id,
    }
    started = time.perf_counter()
    with instruments.TRACER.start_as_current_span(
        f"{names.GEN_AI_EXECUTE_TOOL} {name}",
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        call = ToolCall(span)
        try:
            yield call
        finally:
            instruments.TOOL_CALL_DURATION.record(
                time.perf_counter() - started,
                {names.TOOL_NAME: name, names.TOOL_STATUS: call.status},
            )
