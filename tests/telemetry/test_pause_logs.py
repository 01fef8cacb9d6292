"""A pause's life in the ``symfonic.pauses`` log, with no OpenTelemetry SDK and with one.

An operator reads these lines whatever is installed: each change a pause goes
through (asked, claimed, published, abandoned, escalated, reassigned, expired)
is one line, written once, with the same words and fields whether or not an SDK
records, on SQLite and PostgreSQL. The agents run under a service host given
the store's URL, as ``symfonic serve`` runs them, so each agent wraps the store
itself and the host's own handle on it is the bare store.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from http_support import Clock, payment_agent
from otel_support import installed
from symfonic import escalation, needs_approval
from symfonic.agent import opened_store
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.types import PauseInfo
from symfonic.server.service.host import ServiceHost
from symfonic.server.service.reassignment import reassign

pytestmark = pytest.mark.anyio

CAROL = Principal("carol", frozenset({"approver"}))
OLGA = Principal("olga", frozenset({"operator"}))
APPROVE = {"decision": "approve"}


def provider_down() -> AIMessage:
    raise ConnectionError("the provider is out of reach")


def lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [
        record.symfonic  # type: ignore[attr-defined]
        for record in caplog.records
        if record.name == "symfonic.pauses"
    ]


async def paused(host: ServiceHost, agent: str) -> PauseInfo:
    result = await host.agents[agent].run("pay 5", principal="alice")
    assert result.pause is not None
    return result.pause


@pytest.mark.parametrize("sdk", ["none", "recording"])
async def test_each_pause_change_is_one_log_line_with_or_without_an_sdk(
    store_url: str, sdk: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    if sdk == "none":
        monkeypatch.setattr(opened_store, "recording", lambda: False)
    else:
        installed()
    caplog.set_level(logging.INFO, logger="symfonic.pauses")
    clock = Clock()
    rule = needs_approval(audience="approver", escalate=[escalation(after=60, audience="leads")])
    payments = payment_agent(store_url, name="payments", approval={"pay": rule}, clock=clock)
    flaky = payment_agent(store_url, name="flaky", after=(provider_down,), clock=clock)
    host = ServiceHost([payments, flaky], store=store_url)
    await host.open()
    try:
        assert payments.telemetry is (sdk == "recording")
        first = await paused(host, "payments")
        answered = await payments.resume(first.token, APPROVE, principal=CAROL)
        assert answered.error is None
        second = await paused(host, "flaky")
        failed = await flaky.resume(second.token, APPROVE, principal="alice")
        assert failed.error is not None
        third = await paused(host, "payments")
        clock.advance(61)
        await host.sweep()
        fourth = await paused(host, "payments")
        await reassign(host, OLGA, fourth.pause_id, "leads", "carol is away")
        clock.advance(86400 * 30)
        await host.sweep()
    finally:
        await host.aclose()

    logged = lines(caplog)
    said = [(line["state"], line.get("pause_id", line.get("count"))) for line in logged]
    assert said == [
        ("pending", first.pause_id),
        ("claimed", first.pause_id),
        ("published", first.pause_id),
        ("pending", second.pause_id),
        ("claimed", second.pause_id),
        ("abandoned", second.pause_id),
        ("pending", third.pause_id),
        ("escalated", third.pause_id),
        ("pending", fourth.pause_id),
        ("reassigned", fourth.pause_id),
        ("expired", 2),
    ]
    escalated, reassigned = logged[7], logged[9]
    assert {key: escalated[key] for key in ("previous", "audience", "step")} == {
        "previous": "approver",
        "audience": "leads",
        "step": 1,
    }
    assert {key: reassigned[key] for key in ("previous", "audience", "principal")} == {
        "previous": "approver",
        "audience": "leads",
        "principal": "olga",
    }
    messages = [r.getMessage() for r in caplog.records if r.name == "symfonic.pauses"]
    assert messages[9] == (
        f"pause {fourth.pause_id} reassigned by olga: an operator handed it from approver to leads"
    )
    # The operator's reason is their words: it stays out of the log.
    assert not any("carol is away" in message for message in messages)
