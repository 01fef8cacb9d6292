"""An agent used from Python, with no HTTP service and so no sealer beside it, leaves an audit
trail that is whole and verified once it closes, or once it sweeps."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from symfonic import SymfonicAgent
from symfonic.core.contracts.audit import verify_log
from symfonic.storage import open_store
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio


def paying_agent(store_url: str) -> SymfonicAgent:
    def pay(amount: int) -> str:
        """Pay an amount."""
        return f"paid {amount}"

    model = ScriptedChatModel.from_script([call("pay", {"amount": 5}), reply("Paid.")])
    return SymfonicAgent(model=model, tools=[pay], approval={"pay"}, store=store_url)


async def test_an_embedded_agent_seals_its_audit_records_when_it_closes(store_url: str) -> None:
    async with paying_agent(store_url) as agent:
        paused = await agent.run("pay 5")
        assert paused.pause is not None
        done = await agent.resume(paused.pause.token, {"decision": "approve"})
        assert done.status == "complete"

    async with open_store(store_url) as store:
        anchor = await store.audit_anchor()
        assert anchor.unsealed == 0
        checked, broken = await verify_log(store)
    assert broken is None
    assert checked >= 3  # asked, answered, published


async def test_an_embedded_agent_seals_its_audit_records_when_it_sweeps(store_url: str) -> None:
    async with paying_agent(store_url) as agent:
        paused = await agent.run("pay 5")
        assert paused.pause is not None
        assert (await agent.store.audit_anchor()).unsealed >= 1
        await agent.sweep()
        anchor = await agent.store.audit_anchor()
        assert anchor.unsealed == 0, anchor.unsealed_seconds(datetime.now(UTC))
        checked, broken = await verify_log(agent.store)
        assert broken is None and checked >= 1
