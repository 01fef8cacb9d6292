"""A claim stays held while a long tool runs, and a lost claim stops the turn."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from symfonic import SymfonicAgent
from symfonic.core.contracts.errors import StoreUnavailable
from symfonic.core.contracts.store import Claim
from symfonic.core.contracts.types import PauseState
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio

LEASE = 0.6


def slow_agent(store_url: str, seconds: float) -> SymfonicAgent:
    async def transfer(amount: int) -> str:
        """Move money; takes a while."""
        await anyio.sleep(seconds)
        return f"moved {amount}"

    model = ScriptedChatModel.from_script([call("transfer", {"amount": 9}), reply("Moved.")])
    return SymfonicAgent(
        model=model, tools=[transfer], approval={"transfer"}, store=store_url, claim_lease=LEASE
    )


async def test_a_tool_longer_than_the_lease_keeps_its_claim_against_the_sweeper(
    store_url: str,
) -> None:
    async with slow_agent(store_url, seconds=LEASE * 3) as agent:
        paused = await agent.run("move 9")
        assert paused.pause is not None
        swept = 0

        async def sweeper() -> None:
            nonlocal swept
            while True:
                swept += (await agent.sweep()).abandoned
                await anyio.sleep(LEASE / 6)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(sweeper)
            done = await agent.resume(paused.pause.token, {"decision": "approve"})
            tasks.cancel_scope.cancel()
        assert (done.status, done.answer) == ("complete", "Moved.")
        assert swept == 0
        row = await agent.store.get_pause(paused.pause.pause_id)
        assert row is not None and row.state is PauseState.PUBLISHED


async def test_a_claim_lost_while_the_tool_ran_publishes_nothing(store_url: str) -> None:
    async with slow_agent(store_url, seconds=LEASE) as agent:
        paused = await agent.run("move 9")
        assert paused.pause is not None

        async def take_the_claim_away() -> None:
            while True:
                row = await agent.store.get_pause(paused.pause.pause_id)  # type: ignore[union-attr]
                if row is not None and row.state is PauseState.CLAIMED:
                    assert row.claim_id is not None
                    await agent.store.abandon_claim(row.session_id, row.claim_id)
                    return
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(take_the_claim_away)
            done = await agent.resume(paused.pause.token, {"decision": "approve"})
        assert done.status == "failed"
        session = await agent.get_session(paused.session_id)
        assert session.revision == 0
        row = await agent.store.get_pause(paused.pause.pause_id)
        assert row is not None and row.state is PauseState.ABANDONED


@pytest.mark.parametrize(
    "answer", [{"decision": "approve"}, {"decision": "edit", "args": {"amount": 8}}]
)
async def test_a_claim_whose_reply_was_lost_is_abandoned_not_left_claimed(
    store_url: str, monkeypatch: pytest.MonkeyPatch, answer: Any
) -> None:
    async with slow_agent(store_url, seconds=0) as agent:
        paused = await agent.run("move 9")
        assert paused.pause is not None
        store = agent.store
        claim_for_real = store.claim_pause

        async def committed_then_connection_lost(claim: Claim) -> bool:
            assert await claim_for_real(claim)
            raise StoreUnavailable("the connection dropped before the reply")

        monkeypatch.setattr(store, "claim_pause", committed_then_connection_lost)
        with pytest.raises(StoreUnavailable):
            await agent.resume(paused.pause.token, answer)
        row = await store.get_pause(paused.pause.pause_id)
        assert row is not None and row.state is PauseState.ABANDONED


async def test_a_resume_cancelled_while_its_tool_runs_stops_the_tool(store_url: str) -> None:
    started, stopped = anyio.Event(), anyio.Event()

    async def transfer(amount: int) -> str:
        """Move money; waits on a bank that never answers."""
        started.set()
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            stopped.set()
            raise
        return f"moved {amount}"

    model = ScriptedChatModel.from_script([call("transfer", {"amount": 9}), reply("Moved.")])
    async with SymfonicAgent(
        model=model, tools=[transfer], approval={"transfer"}, store=store_url, claim_lease=LEASE
    ) as agent:
        paused = await agent.run("move 9")
        assert paused.pause is not None
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(agent.resume, paused.pause.token, {"decision": "approve"})
                await started.wait()
                await anyio.sleep(LEASE)  # the heartbeat renews the claim meanwhile
                tasks.cancel_scope.cancel()
        assert stopped.is_set(), "the tool went on running behind a cancelled turn"
        row = await agent.store.get_pause(paused.pause.pause_id)
        assert row is not None and row.state is PauseState.ABANDONED
