"""The core promise on each store: a paused approval resumes once and publishes once."""

from __future__ import annotations

import pytest

from symfonic import SymfonicAgent
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio


async def test_approved_payment_runs_once_and_publishes_once(store_url: str) -> None:
    sent: list[tuple[int, str]] = []

    def send_payment(amount: int, to: str) -> str:
        """Send money."""
        sent.append((amount, to))
        return f"sent {amount} to {to}"

    model = ScriptedChatModel.from_script(
        [call("send_payment", {"amount": 5, "to": "bob"}), reply("Paid bob 5.")]
    )
    async with SymfonicAgent(
        model=model, tools=[send_payment], approval={"send_payment"}, store=store_url
    ) as agent:
        paused = await agent.run("pay bob 5")
        assert paused.status == "paused" and paused.pause is not None
        assert sent == []
        done = await agent.resume(paused.pause.token, {"decision": "approve"})
        assert (done.status, done.answer, done.revision) == ("complete", "Paid bob 5.", 1)
        assert sent == [(5, "bob")]
        again = await agent.resume(paused.pause.token, {"decision": "approve"})
        assert (again.status, again.revision) == ("complete", 1)
        assert sent == [(5, "bob")]
