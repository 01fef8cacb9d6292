"""``symfonic serve`` exporting over OTLP/HTTP to a receiver this test runs on loopback.

The server is a real process configured only by the standard ``OTEL_*``
variables; the receiver decodes what arrives with the OTLP protobuf types.
Without those variables nothing is exported, and asking for export without
the SDK installed is one line naming the extra to install.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from http_support import APPROVE, JSON, frames, free_port
from serve_support import ALICE, serving
from symfonic.cli.main import main
from symfonic.cli.observability import MISSING_SDK, export_of
from symfonic.core.telemetry import names

pytestmark = pytest.mark.slow


class Received:
    """What the receiver was sent: the spans by name, the metric names, the service."""

    def __init__(self) -> None:
        self.spans: dict[str, list[Any]] = {}
        self.metrics: set[str] = set()
        self.services: set[str] = set()
        self.lock = threading.Lock()

    def traces(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        with self.lock:
            for resource in request.resource_spans:
                self.services |= {a.value.string_value for a in resource.resource.attributes
                                  if a.key == "service.name"}
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        self.spans.setdefault(span.name, []).append(span)

    def metric_names(self, body: bytes) -> None:
        request = ExportMetricsServiceRequest.FromString(body)
        with self.lock:
            for resource in request.resource_metrics:
                for scope in resource.scope_metrics:
                    self.metrics |= {metric.name for metric in scope.metrics}


@contextmanager
def receiver() -> Iterator[tuple[str, Received]]:
    """An OTLP/HTTP receiver on a free loopback port (traces and metrics)."""
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        # Keep-alive, as a collector does: the exporter reuses its connection.
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path == "/v1/traces":
                received.traces(body)
            elif self.path == "/v1/metrics":
                received.metric_names(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def _attributes(span: Any) -> dict[str, str]:
    return {a.key: a.value.string_value for a in span.attributes}


def test_serve_exports_spans_and_metrics_over_otlp_http(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'otel.db'}"
    with receiver() as (endpoint, received):
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_SERVICE_NAME": "billing-e2e",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_METRIC_EXPORT_INTERVAL": "200",
        }
        with serving(store, tmp_path / "server.log", "--log-level", "info",
                     "--log-format", "json", env=env) as server, httpx.Client(
            base_url=server.url, headers=ALICE
        ) as client:
            session_id = client.post("/v1/sessions", json={}).json()["session_id"]
            turn = client.post(f"/v1/sessions/{session_id}/turns",
                               json={"message": "Pay alice 42 EUR for the design work"})
            paused = frames(turn.text)[-1]
            assert paused.event == "turn.paused"
            done = client.post("/v1/resume", headers=JSON,
                               json={"token": paused.data["pause_token"], "answer": APPROVE})
            assert done.json()["status"] == "complete"
        # The server has stopped: its last spans and metrics were flushed on the way out.
        output = server.output()
    assert received.services == {"billing-e2e"}
    [turn_span] = received.spans[names.TURN]
    [resume_span] = received.spans[names.RESUME]
    assert _attributes(turn_span)[names.OUTCOME] == "paused"
    assert _attributes(resume_span)[names.CLAIM_RESULT] == "won"
    assert [link.span_id for link in resume_span.links] == [turn_span.span_id]
    [http_resume] = received.spans["POST /v1/resume"]
    assert resume_span.parent_span_id == http_resume.span_id
    exported = {names.TURN_DURATION, names.RESUMES, names.TIME_TO_ANSWER}
    assert exported <= received.metrics, output
    logged = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    states = [line["state"] for line in logged if line.get("logger") == "symfonic.pauses"]
    assert states == ["pending", "claimed", "published"]
    assert paused.data["pause_token"] not in output


def test_nothing_is_exported_unless_a_variable_asks() -> None:
    assert not export_of({}).wanted
    assert not export_of({"OTEL_SERVICE_NAME": "x"}).wanted
    assert export_of({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}).traces == "otlp"
    assert export_of({"OTEL_METRICS_EXPORTER": "console"}).traces == "none"
    disabled = {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}
    assert not export_of(disabled).wanted


def test_export_without_the_sdk_is_one_line_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # as if not installed
    assert main(["serve", "--port", str(free_port())]) == 2
    err = capsys.readouterr().err
    assert err == f"symfonic serve: {MISSING_SDK}\n"
