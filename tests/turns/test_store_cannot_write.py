"""A resume stops before its gated tool once the store has refused a write.

A store that cannot write (a full disk) cannot record what the tool did, so the
tool must not run: the turn ends at once with ``store_unavailable`` and its
claim is released, instead of running the tool and then waiting most of the
lease for a publish that cannot be written. Here the refusal lands between the
claim and the tool, as when another turn's write meets the full disk first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from symfonic import SymfonicAgent
from symfonic.core.contracts.types import PauseState
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio

FULL = "the disk holding the database is full"


async def test_no_gated_tool_runs_once_the_store_has_refused_a_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[int] = []

    def send_payment(amount: int, to: str) -> str:
        """Send money."""
        ran.append(amount)
        return f"sent {amount} to {to}"

    model = ScriptedChatModel.from_script(
        [call("send_payment", {"amount": 5, "to": "bob"}), reply("Paid bob 5.")]
    )
    agent = SymfonicAgent(
        model=model,
        tools=[send_payment],
        approval={"send_payment"},
        store=f"sqlite:///{tmp_path / 's.db'}",
    )
    async with agent:
        paused = await agent.run("pay bob 5")
        assert paused.pause is not None
        store = agent.store
        claim_pause = store.claim_pause

        async def claim_then_refused(*args: Any) -> Any:
            claimed = await claim_pause(*args)
            store.write_failure = FULL
            return claimed

        monkeypatch.setattr(store, "claim_pause", claim_then_refused)
        done = await agent.resume(paused.pause.token, {"decision": "approve"})
        assert ran == []
        assert done.status == "failed" and done.error is not None
        assert done.error.code == "store_unavailable"
        assert FULL in done.error.message
        # The store could in fact write again: the release committed at once.
        pause = await store.get_pause(paused.pause.pause_id)
        assert pause is not None and pause.state is PauseState.ABANDONED
