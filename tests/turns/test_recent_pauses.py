"""The record an agent keeps of the pauses it wrote: what a resume on that agent trusts it for.

A resume on the agent that recorded the pause claims it without reading the row
first; a resume on any other worker reads it once, then claims it. A kept record
is trusted only for what never changes, so a pause answered, claimed or expired
elsewhere meanwhile is refused or replayed exactly as if the row had been read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import pytest
from langchain_core.messages import BaseMessage, ToolMessage

from http_support import Clock
from payments_support import APPROVE, Payments, paying_agent
from symfonic import (
    PauseAlreadyAnswered,
    PauseAlreadyClaimed,
    PauseExpired,
    Principal,
    SymfonicAgent,
)
from symfonic.core.contracts.store import PauseRecord
from symfonic.core.contracts.types import PauseState, TurnStartedEvent
from symfonic.server.service.host import ServiceHost
from symfonic.testing import ScriptedChatModel, call, reply
from symfonic.turns.settlement import RecentPauses

pytestmark = pytest.mark.anyio


class StoreCalls:
    """Counts the pause reads and claims a resume makes, passing each call on."""

    def __init__(self, agent: SymfonicAgent, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        store = agent.store
        for name in ("get_pause", "claim_pause"):
            monkeypatch.setattr(store, name, self._counting(name, getattr(store, name)))

    def _counting(self, name: str, method: Any) -> Any:
        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return await method(*args, **kwargs)

        return counted


class Workers(NamedTuple):
    """Two agents of the same name on one store: the one that paused, and another worker."""

    here: SymfonicAgent
    there: SymfonicAgent
    payments: Payments
    clock: Clock


@pytest.fixture
async def workers(store_url: str) -> AsyncIterator[Workers]:
    payments, clock = Payments(), Clock()
    options: dict[str, Any] = {"clock": clock, "pause_ttl": 60}
    async with paying_agent(store_url, payments, **options) as here, paying_agent(
        store_url, payments, **options
    ) as there:
        yield Workers(here, there, payments, clock)


RESUMES: dict[str, tuple[Any, Any, Principal, list[int]]] = {
    "approve": (APPROVE, "resolved", Principal("alice"), [5]),
    "cancel": (None, "cancelled", Principal("alice"), []),
    "edit": ({"decision": "edit", "args": {"amount": 7}}, "resolved", Principal("alice"), [7]),
    "wildcard": (APPROVE, "resolved", Principal("ops", frozenset({"*"})), [5]),
}


@pytest.mark.parametrize("resume", RESUMES.values(), ids=RESUMES.keys())
async def test_the_agent_that_paused_claims_without_reading_and_another_reads_once(
    workers: Workers, monkeypatch: pytest.MonkeyPatch, resume: tuple[Any, Any, Principal, list[int]]
) -> None:
    answer, status, who, sent = resume
    for agent, reads in ((workers.here, []), (workers.there, ["get_pause"])):
        paused = await workers.here.run("pay", principal="alice")
        assert paused.pause is not None
        workers.payments.sent.clear()
        store = StoreCalls(agent, monkeypatch)
        done = await agent.resume(paused.pause.token, answer, who, status=status)
        assert done.status == "complete" and workers.payments.sent == sent
        assert store.calls == [*reads, "claim_pause"]
        monkeypatch.undo()
        pause = await agent.store.get_pause(paused.pause.pause_id)
        assert pause is not None and pause.state is PauseState.PUBLISHED
        assert (pause.answered_by, pause.answer_status) == (who.name, status)


async def test_a_resume_resolved_from_the_row_leaves_nothing_kept(workers: Workers) -> None:
    # The HTTP route reads the row to find the pause's agent and hands it on.
    paused = await workers.here.run("pay")
    assert paused.pause is not None and len(workers.here.settlement.recent) == 1
    host = ServiceHost([workers.here])
    await host.open()
    _, resolved = await host.resolve(paused.pause.token)
    events = [e async for e in workers.here.resume_stream(resolved, APPROVE)]
    assert events[-1].type == "response.complete"
    assert len(workers.here.settlement.recent) == 0


async def test_a_pause_answered_on_another_worker_replays_or_refuses_here(
    workers: Workers,
) -> None:
    paused = await workers.here.run("pay")
    assert paused.pause is not None
    done = await workers.there.resume(paused.pause.token, APPROVE)
    # Here the kept record still says pending; the claim decides, then the row explains.
    with pytest.raises(PauseAlreadyAnswered):
        await workers.here.resume(paused.pause.token, {"decision": "reject"})
    again = await workers.here.resume(paused.pause.token, APPROVE)
    assert (again.status, again.answer, again.revision) == (done.status, done.answer, done.revision)
    assert workers.payments.sent == [5]


async def test_a_pause_being_answered_on_another_worker_is_refused_here(
    workers: Workers,
) -> None:
    paused = await workers.here.run("pay")
    assert paused.pause is not None
    stream = workers.there.resume_stream(paused.pause.token, APPROVE)
    assert isinstance(await anext(stream), TurnStartedEvent)
    with pytest.raises(PauseAlreadyClaimed):
        await workers.here.resume(paused.pause.token, APPROVE)
    assert [event async for event in stream][-1].type == "response.complete"
    assert workers.payments.sent == [5]


async def test_past_its_expiry_a_kept_pause_is_read_again(workers: Workers) -> None:
    answered = await workers.here.run("pay")
    left = await workers.here.run("pay")
    assert answered.pause is not None and left.pause is not None
    # Answered in time on another worker; the identical answer, sent after the expiry
    # to the agent that paused, is still that answer's replay.
    done = await workers.there.resume(answered.pause.token, APPROVE)
    workers.clock.now += timedelta(seconds=61)
    again = await workers.here.resume(answered.pause.token, APPROVE)
    assert (again.status, again.revision) == (done.status, done.revision)
    # Never answered: expired, here as anywhere.
    with pytest.raises(PauseExpired):
        await workers.here.resume(left.pause.token, APPROVE)
    assert workers.payments.sent == [5]


async def test_the_kept_record_is_the_row_the_store_reads_back(store_url: str) -> None:
    payments = Payments()

    def twice(messages: list[BaseMessage]) -> Any:
        paid = sum(isinstance(m, ToolMessage) for m in messages)
        return call("send_payment", {"amount": 5}, id=f"pay{paid}") if paid < 2 else reply("ok")

    agent = SymfonicAgent(
        model=ScriptedChatModel(respond=twice), tools=[payments.send_payment],
        approval={"send_payment"}, store=store_url,
    )
    async with agent:
        first = await agent.run("pay twice", principal="alice")
        assert first.pause is not None
        kept = agent.settlement.recent.take(first.pause.pause_id)
        assert kept is not None and kept == await agent.store.get_pause(first.pause.pause_id)
        agent.settlement.recent.remember(kept)
        # A second pause of the same turn: which pause it superseded is settled in the
        # store's transaction, and nothing a resume checks; everything else is the row.
        second = await agent.resume(first.pause.token, APPROVE, "alice")
        assert second.pause is not None
        kept = agent.settlement.recent.take(second.pause.pause_id)
        row = await agent.store.get_pause(second.pause.pause_id)
        assert kept is not None and row is not None and row.supersedes == first.pause.pause_id
        assert replace(kept, supersedes=row.supersedes) == row


def _record(pause_id: str) -> PauseRecord:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    return PauseRecord(
        pause_id=pause_id, kind="approval", query="pay?", response_schema={},
        tool_call_id="call", interrupt_id=f"int_{pause_id}", expires_at=now,
        session_id="s", principal="alice", agent="a", audience=None, base_revision=0,
        state=PauseState.PENDING, created_at=now,
    )


def test_a_kept_record_is_taken_once_and_the_oldest_go_first() -> None:
    kept = RecentPauses(capacity=2)
    for pause_id in ("p1", "p2", "p3"):
        kept.remember(_record(pause_id))
    assert len(kept) == 2
    assert kept.take("p1") is None
    taken = kept.take("p2")
    assert taken is not None and taken.pause_id == "p2"
    assert kept.take("p2") is None
    assert len(kept) == 1
