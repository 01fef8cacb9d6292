"""What ``symfonic serve`` exports, decided by the standard ``OTEL_*`` variables: nothing unless
one asks, and then the optional SDK, whose absence is one line saying what to install.
"""

from __future__ import annotations

import copy
import os
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.telemetry.logs import JsonFormatter

if TYPE_CHECKING:
    from fastapi import FastAPI

MISSING_SDK = (
    "the OTEL_* variables ask for telemetry export, but the OpenTelemetry SDK is not "
    "installed: in the symfonic clone, pip install -e '.[otel]'"
)
LOG_FORMS = ("text", "json")


@dataclass(frozen=True)
class Export:
    """Which signals go where: an exporter name per signal, ``none`` for none."""

    traces: str
    metrics: str
    protocol: str

    @property
    def wanted(self) -> bool:
        return self.traces != "none" or self.metrics != "none"


def export_of(environ: Mapping[str, str] = os.environ) -> Export:
    """What the environment asks to export (the OpenTelemetry variables' own meaning)."""
    if environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return Export("none", "none", "")
    endpoint = bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))
    traces = endpoint or bool(environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
    metrics = endpoint or bool(environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"))
    return Export(
        traces=environ.get("OTEL_TRACES_EXPORTER") or ("otlp" if traces else "none"),
        metrics=environ.get("OTEL_METRICS_EXPORTER") or ("otlp" if metrics else "none"),
        protocol=environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf",
    )


@dataclass
class Telemetry:
    """The providers ``serve`` installed: instrument the app, flush on the way out."""

    instrument: Callable[[FastAPI], None]
    shutdown: Callable[[], None]
    metrics: bool


def install(export: Export, service_name: str) -> Telemetry | None:
    """Install the SDK's providers for ``export``; ``None`` when nothing is to be exported,
    `ConfigurationError` when the SDK is missing or an exporter is unknown."""
    if not export.wanted:
        return None
    try:
        # Optional: the ``otel`` extra. Imported only when export was asked for.
        from opentelemetry import metrics, trace
        from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise ConfigurationError(MISSING_SDK) from None
    resource = Resource.create({"service.name": service_name})
    tracer_provider = meter_provider = None
    if export.traces != "none":
        tracer_provider = TracerProvider(resource=resource)
        tracer_provider.add_span_processor(
            BatchSpanProcessor(_span_exporter(export.traces, export.protocol))
        )
        trace.set_tracer_provider(tracer_provider)
    if export.metrics != "none":
        reader = PeriodicExportingMetricReader(_metric_exporter(export.metrics, export.protocol))
        meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
        metrics.set_meter_provider(meter_provider)

    def instrument(app: FastAPI) -> None:
        if tracer_provider is not None:
            FastAPIInstrumentor.instrument_app(app, tracer_provider=tracer_provider)

    providers: list[Any] = [p for p in (tracer_provider, meter_provider) if p is not None]

    def shutdown() -> None:
        while providers:  # once: the app's shutdown and the process's exit both ask
            provider = providers.pop()
            # A flush first: the metric reader's own last collection on shutdown
            # waits no longer than its export interval, and may lose the last figures.
            provider.force_flush()
            provider.shutdown()

    return Telemetry(instrument, shutdown, metrics=meter_provider is not None)


def flush_on_shutdown(app: FastAPI, telemetry: Telemetry) -> None:
    """Flush and stop the providers at the app's shutdown, the last moment anything runs:
    the server re-raises the signal that stopped it."""
    started = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
        try:
            async with started(app) as state:
                yield state
        finally:
            await anyio.to_thread.run_sync(telemetry.shutdown)

    app.router.lifespan_context = lifespan


def _span_exporter(name: str, protocol: str) -> Any:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if name != "otlp":
        raise ConfigurationError(f"OTEL_TRACES_EXPORTER={name} is not one of otlp, console, none")
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpSpanExporter,
    )

    return HttpSpanExporter()


def _metric_exporter(name: str, protocol: str) -> Any:
    if name == "console":
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        return ConsoleMetricExporter()
    if name != "otlp":
        raise ConfigurationError(f"OTEL_METRICS_EXPORTER={name} is not one of otlp, console, none")
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

        return OTLPMetricExporter()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HttpMetricExporter,
    )

    return HttpMetricExporter()


def log_config(form: str, level: str, server: Mapping[str, Any]) -> dict[str, Any]:
    """The server's logging configuration ``server`` (uvicorn's), with symfonic's loggers
    added at ``level``; in ``json`` form every formatter writes one JSON object a line."""
    config = copy.deepcopy(dict(server))
    config.setdefault("loggers", {})["symfonic"] = {
        "handlers": ["default"],
        "level": level.upper(),
        "propagate": False,
    }
    if form == "json":
        config["formatters"] = {name: {"()": JsonFormatter} for name in config["formatters"]}
    return config
