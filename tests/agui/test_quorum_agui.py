"""An approval that needs two approvers, as an AG-UI front end meets it, on both stores.

The interrupt says where the vote stands in its ``metadata.symfonic``; the
thread's owner, where the rule lets them approve, is counted, and the run ends
with the same interrupt, one approval longer; nothing runs until the second
approver, over the native API, completes the quorum.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from ag_ui.core import RunFinishedInterruptOutcome

from agui_support import AguiClient, agui_app, finished, run_body
from symfonic import SymfonicAgent, needs_approval
from symfonic.server.service.host import ServiceHost
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio

KEYS = "alice=alice-key:payments,carol=carol-key:payments"


@pytest.fixture
async def served(store_url: str) -> AsyncIterator[tuple[AguiClient, list[int]]]:
    paid: list[int] = []

    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return f"paid {amount}"

    rule = needs_approval(audience="payments", approvers=2, allow_requester=True)
    model = ScriptedChatModel.from_script([call("pay", {"amount": 9}), reply("Paid.")])
    agent = SymfonicAgent(name="payments", model=model, tools=[pay], approval={"pay": rule})
    host = ServiceHost([agent], store=store_url)
    await host.open()
    client = AguiClient(agui_app(host, KEYS))
    try:
        yield client, paid
    finally:
        await client.aclose()
        await host.aclose()


def interrupt_metadata(events: list[Any]) -> tuple[str, dict[str, Any]]:
    outcome = finished(events).outcome
    assert isinstance(outcome, RunFinishedInterruptOutcome)
    [interrupt] = outcome.interrupts
    assert interrupt.metadata is not None
    return interrupt.id, interrupt.metadata["symfonic"]


async def test_the_owners_approval_is_counted_and_the_second_runs_it(
    served: tuple[AguiClient, list[int]],
) -> None:
    client, paid = served
    thread = f"t-{uuid.uuid4().hex}"
    token, asked = interrupt_metadata(await client.run(run_body(thread, "pay 9")))
    assert (asked["approvalsRequired"], asked["approvals"]) == (2, [])
    assert asked["allowRequester"] is True

    entry = {"interruptId": token, "status": "resolved", "payload": {"approved": True}}
    counted = await client.run(run_body(thread, resume=[entry]))
    again, shown = interrupt_metadata(counted)
    assert again == token
    assert [vote["principal"] for vote in shown["approvals"]] == ["alice"]
    assert paid == []

    body = {"token": token, "answer": {"decision": "approve"}}
    done = await client.http.post(
        "/v1/resume",
        json=body,
        headers={"Authorization": "Bearer carol-key", "Accept": "application/json"},
    )
    assert done.status_code == 200, done.text
    assert done.json()["status"] == "complete" and paid == [9]
