"""Nothing secret in what telemetry exports: a whole run over HTTP, every signal searched.

A person's answer, the pause's token and the caller's API key go through a
served turn, a pause and a resume, with the HTTP server instrumented as
``symfonic serve`` instruments it. Every span (name, attributes, events,
links, status), every metric point's labels and every log line is then
searched for them. Recording the answer is an opt-in, shown to work.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

from http_support import client_of, frames
from otel_support import Recorded, otel
from symfonic import SymfonicAgent
from symfonic.core.telemetry import names
from symfonic.core.telemetry.logs import JsonFormatter
from symfonic.server.app import create_app
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio
__all__ = ["otel"]

API_KEY = "sk-alice-7c41d0a9f3"
ANSWER = "the account ending 9914, passphrase heron-lantern"


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """symfonic's log lines, as ``--log-format json`` writes them."""
    sink = io.StringIO()
    handler = logging.StreamHandler(sink)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("symfonic")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield sink
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _agent(store_url: str, **options: Any) -> SymfonicAgent:
    def respond(messages: list[BaseMessage]) -> Any:
        if isinstance(messages[-1], HumanMessage):
            return call("ask_human", {"question": "Which account?"}, id="q_1")
        return reply("Thank you, noted.")

    return SymfonicAgent(name="secretive", model=ScriptedChatModel(respond=respond),
                         store=store_url, **options)


async def _full_run(agent: SymfonicAgent) -> str:
    """A served turn that pauses, then its resume with ``ANSWER``; returns the token."""
    app = create_app([agent], api_keys=f"alice={API_KEY}", sweep_interval=0)
    FastAPIInstrumentor.instrument_app(app)
    headers = {"Authorization": f"Bearer {API_KEY}"}
    async with app.router.lifespan_context(app), client_of(app) as client:
        created = await client.post("/v1/sessions", json={}, headers=headers)
        session_id = created.json()["session_id"]
        turn = await client.post(f"/v1/sessions/{session_id}/turns",
                                 json={"message": "pay my bill"}, headers=headers)
        paused = frames(turn.text)[-1]
        assert paused.event == "turn.paused"
        token = str(paused.data["pause_token"])
        resumed = await client.post("/v1/resume", json={"token": token, "answer": ANSWER},
                                    headers=headers)
        assert frames(resumed.text)[-1].event == "response.complete"
        listed = await client.get("/v1/pauses?state=pending", headers=headers)
        assert listed.status_code == 200
    return token


def _everything_exported(otel: Recorded, logs: str) -> str:
    parts: list[str] = [logs]
    for span in otel.finished():
        parts.append(span.name)
        parts.append(json.dumps(dict(span.attributes or {}), default=str))
        parts.append(str(span.status.description))
        parts += [event.name + json.dumps(dict(event.attributes or {}), default=str)
                  for event in span.events]
        parts += [json.dumps(dict(link.attributes or {}), default=str) for link in span.links]
        parts.append(json.dumps(dict(span.resource.attributes), default=str))
    data = otel.reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                parts.append(metric.name)
                parts += [json.dumps(dict(point.attributes or {}), default=str)
                          for point in metric.data.data_points]
    return "\n".join(parts)


async def test_no_token_key_or_answer_in_any_span_metric_or_log_line(
    store_url: str, otel: Recorded, log_lines: io.StringIO
) -> None:
    token = await _full_run(_agent(store_url))
    exported = _everything_exported(otel, log_lines.getvalue())
    # The run was seen: HTTP server spans, the resume, and a log line per state change.
    assert any(span.name.startswith("POST /v1/resume") for span in otel.finished())
    [http] = [span for span in otel.finished() if span.name == "POST /v1/resume"]
    [resume] = otel.named(names.RESUME)
    assert http.context is not None and resume.parent is not None
    assert resume.parent.span_id == http.context.span_id  # the HTTP server span is its parent
    lines = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    states = [line["state"] for line in lines if line.get("logger") == "symfonic.pauses"]
    assert states == ["pending", "claimed", "published"]
    assert all(len(line["trace_id"]) == 32 for line in lines if "state" in line)
    for secret in (token, token.split(".")[-1], API_KEY, ANSWER, "heron-lantern"):
        assert secret not in exported


async def test_the_answer_is_recorded_only_when_the_agent_opts_in(
    store_url: str, otel: Recorded, log_lines: io.StringIO
) -> None:
    await _full_run(_agent(store_url, record_answers=True))
    [resume] = otel.named(names.RESUME)
    assert json.loads(str((resume.attributes or {})[names.ANSWER_CONTENT])) == ANSWER
    assert ANSWER not in log_lines.getvalue()
