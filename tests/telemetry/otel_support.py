"""The OpenTelemetry SDK with in-memory exporters, installed once for the test process.

The API's providers can be set once per process, so the fixture installs them
the first time a test asks and hands every test the same exporters, emptied of
spans before it runs. Metrics are cumulative: a test reads a counter before and
after what it does, or filters by an agent name of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@dataclass
class Recorded:
    spans: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.finished() if span.name == name]

    def points(self, metric: str) -> list[Any]:
        """Every data point of ``metric`` collected so far (cumulative)."""
        data = self.reader.get_metrics_data()
        found: list[Any] = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for each in scope.metrics:
                    if each.name == metric:
                        found.extend(each.data.data_points)
        return found

    def total(self, metric: str, **labels: Any) -> float:
        """The sum (or count, for a histogram) of ``metric``'s points with these labels."""
        total = 0.0
        for point in self.points(metric):
            if all(point.attributes.get(key) == value for key, value in labels.items()):
                total += getattr(point, "value", None) or getattr(point, "count", 0)
        return total


_installed: dict[str, Recorded] = {}


def installed() -> Recorded:
    if "sdk" not in _installed:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        _installed["sdk"] = Recorded(exporter, reader, provider)
    return _installed["sdk"]


@pytest.fixture
def otel() -> Iterator[Recorded]:
    recorded = installed()
    recorded.spans.clear()
    yield recorded


def attributes(span: ReadableSpan) -> Mapping[str, Any]:
    return dict(span.attributes or {})


def children(parent: ReadableSpan, spans: list[ReadableSpan]) -> list[ReadableSpan]:
    assert parent.context is not None
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]
