"""Every way a resume is refused, each with its own error, and what it leaves behind.

A refusal before the claim (bad token, wrong principal, invalid answer, refused
budget) spends nothing: the pause stays pending and can be answered afterwards.
Expired and abandoned pauses are gone for good. A settled pause replays the
identical request and refuses a different one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import pytest

from http_support import Clock
from payments_support import APPROVE, Payments, paying_agent
from symfonic import (
    BudgetRefused,
    InvalidAnswer,
    PauseAbandoned,
    PauseAlreadyAnswered,
    PauseAlreadyClaimed,
    PauseExpired,
    PauseForbidden,
    PauseNotFound,
    Principal,
    Quota,
    SessionPaused,
    SymfonicAgent,
)
from symfonic.capabilities.human.tokens import TokenSigner
from symfonic.core.contracts.types import (
    PauseInfo,
    PauseState,
    ResponseCompleteEvent,
    ToolResultEvent,
    TurnStartedEvent,
)
from symfonic.server.service.host import ServiceHost

pytestmark = pytest.mark.anyio


class Paid(NamedTuple):
    """A turn paused for approval of a payment, on an open agent."""

    agent: SymfonicAgent
    payments: Payments
    pause: PauseInfo
    session_id: str


@pytest.fixture
async def paid(store_url: str) -> AsyncIterator[Paid]:
    payments = Payments()
    async with paying_agent(store_url, payments) as agent:
        paused = await agent.run("pay")
        assert paused.pause is not None
        yield Paid(agent, payments, paused.pause, paused.session_id)


async def _state(agent: SymfonicAgent, pause_id: str) -> PauseState:
    pause = await agent.store.get_pause(pause_id)
    assert pause is not None
    return pause.state


async def test_an_expired_pause_refuses_with_pause_expired(store_url: str) -> None:
    clock, payments = Clock(), Payments()
    async with paying_agent(store_url, payments, clock=clock, pause_ttl=60) as agent:
        paused = await agent.run("pay")
        assert paused.pause is not None
        assert paused.pause.expires_at == clock.now + timedelta(seconds=60)
        clock.advance(59)
        # Still answerable just before it expires...
        invalid = {"decision": "nope"}
        with pytest.raises(InvalidAnswer):
            await agent.resume(paused.pause.token, invalid)
        assert [p.pause_id for p in await agent.pauses()] == [paused.pause.pause_id]
        clock.advance(1)
        # An expired pause is no longer offered for answering, swept or not.
        assert await agent.pauses() == []
        with pytest.raises(PauseExpired) as raised:
            await agent.resume(paused.pause.token, APPROVE)
        assert raised.value.status == 410
        report = await agent.sweep()
        assert (report.expired, report.abandoned) == (1, 0)
        assert await _state(agent, paused.pause.pause_id) is PauseState.EXPIRED
        with pytest.raises(PauseExpired):
            await agent.resume(paused.pause.token, APPROVE)
        assert payments.sent == []
        # An expired pause does not hold the session: a new turn runs.
        assert (await agent.run("pay", paused.session_id)).status == "paused"


async def test_a_pause_abandoned_by_a_new_turn_refuses_with_pause_abandoned(paid: Paid) -> None:
    agent, payments, pause = paid.agent, paid.payments, paid.pause
    with pytest.raises(SessionPaused):
        await agent.run("something else", paid.session_id)
    newer = await agent.run("something else", paid.session_id, on_pending_pause="abandon")
    assert newer.status == "paused" and newer.pause is not None
    assert await _state(agent, pause.pause_id) is PauseState.ABANDONED
    with pytest.raises(PauseAbandoned) as raised:
        await agent.resume(pause.token, APPROVE)
    assert raised.value.status == 410
    assert payments.sent == []
    done = await agent.resume(newer.pause.token, APPROVE)
    assert done.status == "complete" and payments.sent == [5]


async def test_a_claim_whose_lease_lapsed_is_swept_to_abandoned(store_url: str) -> None:
    clock, payments = Clock(), Payments()
    async with paying_agent(store_url, payments, clock=clock, claim_lease=30) as agent:
        paused = await agent.run("pay")
        assert paused.pause is not None
        stream = agent.resume_stream(paused.pause.token, APPROVE)
        started = await anext(stream)
        assert isinstance(started, TurnStartedEvent) and started.resumed
        assert await _state(agent, paused.pause.pause_id) is PauseState.CLAIMED
        # The worker stalls past its lease; the sweeper takes the claim back.
        clock.advance(31)
        report = await agent.sweep()
        assert report.abandoned == 1
        assert await _state(agent, paused.pause.pause_id) is PauseState.ABANDONED
        with pytest.raises(PauseAbandoned):
            await agent.resume(paused.pause.token, APPROVE)
        # The stalled worker wakes: it finds its claim gone and publishes nothing.
        rest = [event async for event in stream]
        assert rest[-1].type == "error"
        assert not any(isinstance(e, ResponseCompleteEvent) for e in rest)
        assert payments.sent == []
        session = await agent.store.get_session(paused.session_id)
        assert session is not None and session.revision == 0
        assert await agent.store.history(paused.session_id, 10) == []
        # The session stays usable.
        assert (await agent.run("pay", paused.session_id)).status == "paused"


async def test_a_wrong_principal_is_refused_and_spends_nothing(store_url: str) -> None:
    payments = Payments()
    async with paying_agent(store_url, payments) as agent:
        paused = await agent.run("pay", principal="alice")
        assert paused.pause is not None
        with pytest.raises(PauseForbidden) as raised:
            await agent.resume(paused.pause.token, APPROVE, principal="mallory")
        assert raised.value.status == 403
        assert raised.value.message == "mallory may not answer this pause: only alice may"
        with pytest.raises(PauseForbidden):
            await agent.resume(
                paused.pause.token, APPROVE, principal=Principal("mallory", frozenset({"approver"}))
            )
        assert await _state(agent, paused.pause.pause_id) is PauseState.PENDING
        # Any-scope principals may answer anything.
        admin = Principal("ops", frozenset({"*"}))
        done = await agent.resume(paused.pause.token, APPROVE, principal=admin)
        assert done.status == "complete" and payments.sent == [5]
        # A settled pause does not tell another principal what it published.
        with pytest.raises(PauseForbidden):
            await agent.resume(paused.pause.token, APPROVE, principal="mallory")


@pytest.mark.parametrize(
    "token",
    [None, 123, "", "sfp_", "sfp_not-base64!!", "x" * 500, "sfp_" + "A" * 64],
)
async def test_a_token_that_does_not_verify_names_no_pause(sqlite_url: str, token: Any) -> None:
    async with paying_agent(sqlite_url, Payments()) as agent:
        with pytest.raises(PauseNotFound) as raised:
            await agent.resume(token, APPROVE)
        assert raised.value.status == 404


async def test_a_forged_or_foreign_token_names_no_pause(paid: Paid) -> None:
    agent, pause = paid.agent, paid.pause
    foreign = TokenSigner(b"another database's secret!!").mint(pause.pause_id)
    tampered = pause.token[:-2] + ("AA" if pause.token[-2:] != "AA" else "BB")
    for token in (foreign, tampered):
        with pytest.raises(PauseNotFound):
            await agent.resume(token, APPROVE)
    assert await _state(agent, pause.pause_id) is PauseState.PENDING


INVALID = [
    {"decision": "maybe"},
    {"decision": "edit"},
    {"decision": "edit", "args": {"amount": "five"}},
    {"decision": "approve", "extra": 1},
    "yes",
    None,
]


async def test_an_invalid_answer_is_refused_without_spending_the_token(paid: Paid) -> None:
    agent, payments, pause = paid.agent, paid.payments, paid.pause
    for answer in INVALID:
        with pytest.raises(InvalidAnswer) as raised:
            await agent.resume(pause.token, answer)
        assert raised.value.status == 422 and raised.value.message
        assert raised.value.fields["errors"]
        assert await _state(agent, pause.pause_id) is PauseState.PENDING
    assert payments.sent == []
    done = await agent.resume(pause.token, APPROVE)
    assert done.status == "complete" and payments.sent == [5]


async def test_replay_of_the_identical_answer_returns_the_published_outcome(paid: Paid) -> None:
    agent, payments, pause = paid.agent, paid.payments, paid.pause
    done = await agent.resume(pause.token, APPROVE)
    again = await agent.resume(pause.token, dict(APPROVE))
    assert (again.status, again.answer, again.revision, again.session_id) == (
        done.status, done.answer, done.revision, done.session_id,
    )
    assert not any(isinstance(e, ToolResultEvent) for e in again.events)
    assert payments.sent == [5]
    history = await agent.store.history(paid.session_id, 10)
    assert [b["role"] for b in history] == ["human", "ai", "tool", "ai"]
    session = await agent.store.get_session(paid.session_id)
    assert session is not None and session.revision == 1


async def test_replay_with_a_different_answer_is_refused(paid: Paid) -> None:
    agent, payments, pause = paid.agent, paid.payments, paid.pause
    await agent.resume(pause.token, APPROVE)
    different: list[tuple[Any, Any]] = [
        ({"decision": "reject"}, "resolved"),
        (APPROVE, "cancelled"),
    ]
    for answer, status in different:
        with pytest.raises(PauseAlreadyAnswered) as raised:
            await agent.resume(pause.token, answer, status=status)
        assert (raised.value.status, raised.value.code) == (409, "already_answered")
    assert payments.sent == [5]


async def test_a_refusal_says_who_answered_the_pause_and_when(store_url: str) -> None:
    clock = Clock()
    clock.now = datetime(2026, 3, 4, 5, 6, 7, 890000, tzinfo=UTC)
    async with paying_agent(store_url, Payments(), clock=clock) as agent:
        paused = await agent.run("pay", principal="alice")
        assert paused.pause is not None
        desk = Principal("desk", frozenset({"*"}))  # may answer any pause
        await agent.resume(paused.pause.token, APPROVE, principal=desk)
        clock.advance(90)
        with pytest.raises(PauseAlreadyAnswered) as raised:
            await agent.resume(paused.pause.token, {"decision": "reject"}, principal="alice")
    assert raised.value.message == (
        "this pause was already answered by desk at 2026-03-04 05:06:07 UTC, "
        "with a different answer"
    )


async def test_a_pause_being_answered_refuses_even_the_identical_answer(paid: Paid) -> None:
    agent, payments, pause = paid.agent, paid.payments, paid.pause
    stream = agent.resume_stream(pause.token, APPROVE)
    assert isinstance(await anext(stream), TurnStartedEvent)
    with pytest.raises(PauseAlreadyClaimed):
        await agent.resume(pause.token, APPROVE)
    events = [event async for event in stream]
    assert isinstance(events[-1], ResponseCompleteEvent)
    assert payments.sent == [5]


async def test_a_refused_budget_does_not_spend_the_token(store_url: str) -> None:
    ticks = [0.0]
    quota = Quota(turns=1, per_seconds=60, clock=lambda: ticks[0])
    payments = Payments()
    async with paying_agent(store_url, payments, quota=quota) as agent:
        paused = await agent.run("pay")
        assert paused.pause is not None
        with pytest.raises(BudgetRefused) as raised:
            await agent.resume(paused.pause.token, APPROVE)
        assert raised.value.status == 429 and raised.value.retry_after == 60
        assert await _state(agent, paused.pause.pause_id) is PauseState.PENDING
        ticks[0] = 61.0
        done = await agent.resume(paused.pause.token, APPROVE)
        assert done.status == "complete" and payments.sent == [5]


async def test_refusals_raise_before_the_first_event(paid: Paid) -> None:
    agent, pause = paid.agent, paid.pause
    stream = agent.resume_stream(pause.token, {"decision": "maybe"})
    with pytest.raises(InvalidAnswer):
        await anext(stream)
    stream = agent.resume_stream("sfp_nothing", APPROVE)
    with pytest.raises(PauseNotFound):
        await anext(stream)


async def test_another_principal_is_told_the_session_does_not_exist(store_url: str) -> None:
    from symfonic import SessionNotFound

    async with paying_agent(store_url, Payments()) as agent:
        paused = await agent.run("pay", principal="alice")
        for act in (
            agent.run("hi", paused.session_id, principal="bob"),
            agent.get_session(paused.session_id, principal="bob"),
            agent.run("hi", "no-such-session", principal="alice"),
        ):
            with pytest.raises(SessionNotFound) as raised:
                await act
            assert raised.value.status == 404
        session = await agent.get_session(paused.session_id, principal="alice")
        assert session.principal == "alice"


async def test_the_token_alone_decides_which_pause_a_resume_answers(store_url: str) -> None:
    payments = Payments()
    async with paying_agent(store_url, payments) as agent:
        mine = await agent.run("pay")
        other = await agent.run("pay")
        assert mine.pause is not None and other.pause is not None
        # A transport resolves the token once, to route it, and the resume starts there.
        host = ServiceHost([agent])
        await host.open()
        _, resolved = await host.resolve(mine.pause.token)
        assert resolved.pause.pause_id == mine.pause.pause_id
        events = [e async for e in agent.resume_stream(resolved, APPROVE)]
        assert isinstance(events[-1], ResponseCompleteEvent)
        assert await _state(agent, mine.pause.pause_id) is PauseState.PUBLISHED
        assert await _state(agent, other.pause.pause_id) is PauseState.PENDING
        # And a resolved pause the caller may not answer is still refused.
        _, others = await host.resolve(other.pause.token)
        with pytest.raises(PauseForbidden):
            await anext(agent.resume_stream(others, APPROVE, "mallory"))
        assert await _state(agent, other.pause.pause_id) is PauseState.PENDING
