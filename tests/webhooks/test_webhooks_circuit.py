"""A destination's circuit: opened after repeated failures, probed after a backoff, closed.

The transitions are pure functions, checked first on their own; then a real
receiver that answers 500 opens its circuit, nothing is sent to it until the
backoff ends, each transition is logged in words and shown to an operator, and
once it answers again one probe closes the circuit and every event arrives.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import anyio
import httpx
import pytest

from http_support import auth, paused_turn, payment_agent, serve
from symfonic import Webhook, WebhookSettings
from symfonic.core.contracts.webhooks import CircuitState, Destination
from symfonic.server.service.webhook_circuit import Outcomes, after, backoff, probe
from webhook_support import SECRET, receiving

T0 = datetime(2030, 1, 1, tzinfo=UTC)
CLOSED = Destination("http://x/hook", CircuitState.CLOSED, 0, 0, None, T0, None, 0)
POLICY = WebhookSettings(circuit_failures=3, circuit_backoff=5, circuit_max_backoff=30)
KEYS = "alice=key-alice,oscar=key-oscar:operator"


def test_outcomes_count_the_failures_after_the_last_delivery() -> None:
    assert Outcomes.of(["a", None, "b", "c"]) == Outcomes(True, 2, "c")
    assert Outcomes.of(["a", "b"]) == Outcomes(False, 2, "b")
    assert Outcomes.of([None]) == Outcomes(True, 0, None)


def test_a_circuit_opens_backs_off_doubling_and_closes_on_a_delivery() -> None:
    two = after(CLOSED, Outcomes(False, 2, "500"), T0, POLICY)
    assert (two.state, two.failures) == (CircuitState.CLOSED, 2)
    opened = after(two, Outcomes(False, 1, "500"), T0, POLICY)
    assert (opened.state, opened.opens, opened.retry_at) == (
        CircuitState.OPEN, 1, T0 + timedelta(seconds=5))
    assert probe(opened, T0 + timedelta(seconds=4), hold=20) is None
    later = T0 + timedelta(seconds=5)
    probing = probe(opened, later, hold=20)
    assert probing is not None and probing.state is CircuitState.HALF_OPEN
    assert probe(probing, later, hold=20) is None  # one probe at a time
    again = after(probing, Outcomes(False, 1, "timeout"), later, POLICY)
    assert (again.state, again.opens, again.retry_at) == (
        CircuitState.OPEN, 2, later + timedelta(seconds=10))
    assert [backoff(POLICY, n) for n in (1, 2, 3, 4, 5)] == [5, 10, 20, 30, 30]
    closed = after(replace(again, state=CircuitState.HALF_OPEN), Outcomes(True, 0, None),
                   later, POLICY)
    assert (closed.state, closed.failures, closed.opens, closed.retry_at) == (
        CircuitState.CLOSED, 0, 0, None)


@pytest.mark.anyio
async def test_a_failing_destination_opens_is_left_alone_then_closes_when_it_answers(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="symfonic.webhooks")
    settings = WebhookSettings(timeout=1, retry_schedule=(0.1,) * 20, jitter=0, poll_interval=0.05,
                               circuit_failures=3, circuit_backoff=1.5)
    agent = payment_agent(store_url)
    with receiving() as receiver:
        receiver.status = 500
        hook = Webhook(receiver.url, SECRET, events={"pause.created"})
        async with serve(agent, api_keys=KEYS, webhooks=[hook], webhook_settings=settings) as c:
            for _ in range(2):
                await paused_turn(c, auth("alice"))
            await receiver.wait_for(3, within=2.0)
            opened = await _circuit(c, "open")
            tried = len(receiver.received)
            await anyio.sleep(1.0)  # inside the backoff: nothing is sent
            assert len(receiver.received) == tried
            receiver.status = 200
            await _circuit(c, "closed", within=3.0)
            await receiver.wait_for(tried + 2, within=2.0)
            refused = await c.get("/v1/webhooks/destinations", headers=auth("alice"))
    assert refused.status_code == 403
    assert opened["failures"] >= 3 and opened["last_error"] == "the receiver answered 500"
    assert opened["summary"].startswith("circuit open after ")
    delivered = {r.payload["data"]["pause_id"] for r in receiver.received if r.status == 200}
    assert len(delivered) == 2
    said = [r.getMessage() for r in caplog.records if "circuit" in r.getMessage()]
    assert any("circuit open after" in line for line in said), said
    assert any("circuit half-open" in line for line in said), said
    assert any("circuit closed" in line for line in said), said
    assert all("Traceback" not in line and "Destination(" not in line for line in said)


async def _circuit(client: httpx.AsyncClient, state: str, within: float = 2.0) -> dict[str, str]:
    with anyio.fail_after(within):
        while True:
            listed = await client.get("/v1/webhooks/destinations", headers=auth("oscar"))
            assert listed.status_code == 200, listed.text
            (destination,) = listed.json()["destinations"]
            if destination["state"] == state:
                return dict(destination)
            await anyio.sleep(0.05)
