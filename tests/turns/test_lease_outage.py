"""A won claim's writes wait out a store that is out of reach, for as long as the lease allows.

Each test puts an outage in front of one store method: its first calls raise
``StoreUnavailable`` with a driver's words in it, as the adapters do when the
server restarts, and (``committed``) optionally after the real write took
effect, as when a commit's reply is lost with the connection. Only what the
lease allows is waited for; a conflict is an answer and is never retried.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from outage_support import Outage
from symfonic import SymfonicAgent
from symfonic.core.contracts.errors import PauseAbandoned, RevisionConflict
from symfonic.core.contracts.types import PauseState, TurnResult
from symfonic.testing import ScriptedChatModel, call, reply
from symfonic.turns.lease import RETRY_MARGIN

pytestmark = pytest.mark.anyio

APPROVE = {"decision": "approve"}


def transfer_agent(
    store_url: str,
    *,
    pauses: int = 1,
    lease: float = 120.0,
    work: float = 0.0,
    model: ScriptedChatModel | None = None,
) -> SymfonicAgent:
    async def transfer(amount: int) -> str:
        """Move money."""
        await anyio.sleep(work)
        return f"moved {amount}"

    steps = [call("transfer", {"amount": 9}) for _ in range(pauses)]
    model = model or ScriptedChatModel.from_script([*steps, reply("Moved.")])
    return SymfonicAgent(
        model=model, tools=[transfer], approval={"transfer"}, store=store_url, claim_lease=lease
    )


async def resume_through(
    monkeypatch: pytest.MonkeyPatch, agent: SymfonicAgent, method: str, failures: float, **kw: Any
) -> tuple[TurnResult, Outage, TurnResult]:
    """Pause a transfer, stand an outage in front of ``method``, then approve the pause."""
    paused = await agent.run("move 9")
    assert paused.pause is not None
    wrapper = Outage(getattr(agent.store, method), failures, **kw)
    monkeypatch.setattr(agent.store, method, wrapper)
    return paused, wrapper, await agent.resume(paused.pause.token, APPROVE)


async def state_of(agent: SymfonicAgent, paused: TurnResult) -> PauseState:
    assert paused.pause is not None
    row = await agent.store.get_pause(paused.pause.pause_id)
    assert row is not None
    return row.state


async def test_a_publish_that_meets_an_outage_is_retried_and_publishes(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with transfer_agent(store_url) as agent:
        paused, publish, done = await resume_through(
            monkeypatch, agent, "publish_resume", failures=3
        )
        assert (done.status, done.answer, done.revision) == ("complete", "Moved.", 1)
        assert len(publish.calls) == 4
        assert await state_of(agent, paused) is PauseState.PUBLISHED


async def test_a_publish_whose_reply_was_lost_is_published_once(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with transfer_agent(store_url) as agent:
        paused, publish, done = await resume_through(
            monkeypatch, agent, "publish_resume", failures=1, committed=True
        )
        # The retry found the pause published by this very claim: that is its publish.
        assert (done.status, done.revision) == ("complete", 1)
        assert len(publish.calls) == 2
        session = await agent.get_session(paused.session_id)
        assert session.revision == 1
        assert len(await agent.store.history(paused.session_id, 99)) == 4


async def test_a_second_pause_whose_reply_was_lost_is_recorded_once(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with transfer_agent(store_url, pauses=2) as agent:
        first, record, second = await resume_through(
            monkeypatch, agent, "record_pause", failures=1, committed=True
        )
        assert second.status == "paused" and second.pause is not None
        assert len(record.calls) == 2
        rows = await agent.store.session_pauses(first.session_id)
        assert [(r.pause_id, r.state) for r in rows] == [
            (first.pause.pause_id, PauseState.SUPERSEDED),
            (second.pause.pause_id, PauseState.PENDING),
        ]
        done = await agent.resume(second.pause.token, APPROVE)
        assert (done.status, done.revision) == ("complete", 1)


async def test_a_store_away_longer_than_the_lease_gives_up_before_it_and_abandons(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lease = 1.0
    async with transfer_agent(store_url, lease=lease) as agent:
        paused, publish, failed = await resume_through(
            monkeypatch, agent, "publish_resume", failures=math.inf
        )
        gave_up = datetime.now(UTC)
        assert failed.status == "failed" and failed.error is not None
        row = await agent.store.get_pause(paused.pause.pause_id)
        assert row is not None and row.state is PauseState.ABANDONED
        assert row.lease_until is not None
        # Retried for most of the lease, the last attempt at the margin (give or
        # take the event loop's lateness, which the margin is there to absorb),
        # and the turn gave up (and abandoned its claim) before the lease ran out.
        margin = timedelta(seconds=lease * RETRY_MARGIN)
        assert len(publish.calls) >= 4  # backoff from 50 ms, doubling
        assert publish.calls[-1] - publish.calls[0] > timedelta(seconds=lease / 2)
        assert row.lease_until - margin * 2 < publish.calls[-1] < row.lease_until - margin / 2
        assert gave_up < row.lease_until
        assert (await agent.get_session(paused.session_id)).revision == 0
        # What the driver said is not what the caller reads.
        assert "CannotConnectNowError" not in failed.error.message
        assert "shutting down" not in failed.error.message


@pytest.mark.parametrize(
    "conflict",
    [
        RevisionConflict("another turn was published first"),
        PauseAbandoned("this resume's claim lapsed before it could publish"),
    ],
    ids=["revision_conflict", "claim_lapsed"],
)
async def test_a_conflict_is_an_answer_and_is_not_retried(
    store_url: str, monkeypatch: pytest.MonkeyPatch, conflict: Exception
) -> None:
    async with transfer_agent(store_url) as agent:
        paused, publish, failed = await resume_through(
            monkeypatch, agent, "publish_resume", failures=1, error=conflict
        )
        assert failed.status == "failed" and failed.error is not None
        assert failed.error.code == ("revision_conflict" if isinstance(
            conflict, RevisionConflict) else "internal")
        assert len(publish.calls) == 1
        assert await state_of(agent, paused) is PauseState.ABANDONED


async def test_an_abandon_that_meets_an_outage_is_retried(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def respond(messages: list[BaseMessage]) -> AIMessage:
        if any(isinstance(m, ToolMessage) for m in messages):
            raise RuntimeError("the model broke")  # after the claim: the turn fails
        return call("transfer", {"amount": 9})

    agent = transfer_agent(store_url, model=ScriptedChatModel(respond=respond))
    async with agent:
        paused, abandon, failed = await resume_through(
            monkeypatch, agent, "abandon_claim", failures=2
        )
        assert failed.status == "failed"
        assert len(abandon.calls) == 3
        assert await state_of(agent, paused) is PauseState.ABANDONED


async def test_a_renewal_that_meets_an_outage_inside_the_lease_does_not_stop_the_turn(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lease = 0.6
    # The tool outlasts a third of the lease: its heartbeats and the renewal at
    # the next event all find the store away, with most of the lease still held.
    async with transfer_agent(store_url, lease=lease, work=lease / 2) as agent:
        _, renew, done = await resume_through(
            monkeypatch, agent, "renew_claim", failures=math.inf
        )
        assert (done.status, done.answer) == ("complete", "Moved.")
        assert len(renew.calls) >= 2
