"""symfonic with the OpenTelemetry SDK configured: what tracing and metrics cost a cycle.

The same agent and cycle as :mod:`bench.workloads.symfonic_workload`; the child
process first installs the SDK's tracer and meter providers as ``symfonic
serve`` does (a batch span processor, a periodic metric reader), with exporters
that drop what they are handed, so the figure is the cost of recording every
span and measurement in this process, not of a network or a collector. Beside
the ``symfonic`` system (the API alone, no SDK configured: every span a no-op),
it shows what turning export on costs, and that with it off the cost is noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.workloads.base import package_version
from bench.workloads.symfonic_workload import SymfonicWorkload


class SymfonicOtelWorkload(SymfonicWorkload):
    system = "symfonic+otel"

    _providers: tuple[Any, ...] = ()

    async def open(self) -> None:
        # The SDK is imported only by this system's child: the others never load it.
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import (
            MetricExporter,
            MetricExportResult,
            MetricsData,
            PeriodicExportingMetricReader,
        )
        from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )

        class DropSpans(SpanExporter):
            def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        class DropMetrics(MetricExporter):
            def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000,
                       **kwargs: Any) -> MetricExportResult:
                return MetricExportResult.SUCCESS

            def force_flush(self, timeout_millis: float = 10_000) -> bool:
                return True

            def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
                pass

        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(BatchSpanProcessor(DropSpans()))
        trace.set_tracer_provider(tracer_provider)
        reader = PeriodicExportingMetricReader(DropMetrics(), export_interval_millis=1000)
        meter_provider = MeterProvider(metric_readers=[reader])
        metrics.set_meter_provider(meter_provider)
        self._providers = (tracer_provider, meter_provider)
        await super().open()

    async def close(self) -> None:
        await super().close()
        for provider in self._providers:
            provider.shutdown()
        self._providers = ()

    def versions(self) -> dict[str, str]:
        return {**super().versions(), "opentelemetry-sdk": package_version("opentelemetry-sdk")}

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "telemetry": "SDK: batch spans, periodic metrics, dropped"}
