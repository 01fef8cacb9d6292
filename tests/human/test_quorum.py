"""Four eyes: a gated call that needs two approvals, through whole turns on SQLite and PostgreSQL.

alice asks and may not approve her own request; carol approves and the pause
still waits, nothing run; carol again is a replay that counts once; dave approves
and the tool runs once. An edit on another worker resets the count: the edited
call, approved by its editor and one more, runs once with the edited arguments,
and an approval of the old ones is refused as stale. One reject after an
approval rejects. The last two approvals sent to two workers at once run the
tool once. Every vote is in the audit trail.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import anyio
import pytest
from langchain_core.messages import AIMessage, BaseMessage

from symfonic import (
    ConfigurationError,
    OwnRequest,
    PauseAlreadyClaimed,
    Principal,
    StaleQuestion,
    SymfonicAgent,
    TurnResult,
    needs_approval,
)
from symfonic.core.contracts.audit import verify_log
from symfonic.core.contracts.types import PauseState, ToolResultEvent
from symfonic.testing import ScriptedChatModel, calls, current_turn, reply

pytestmark = pytest.mark.anyio

ALICE = Principal("alice", frozenset({"payments"}))
CAROL = Principal("carol", frozenset({"payments"}))
DAVE = Principal("dave", frozenset({"payments"}))
ERIN = Principal("erin", frozenset({"payments"}))
APPROVE = {"decision": "approve"}


@dataclass
class Bank:
    paid: list[int] = field(default_factory=list)

    def pay(self, amount: int) -> str:
        """Pay an amount."""
        self.paid.append(amount)
        return f"paid {amount}"

    def model(self) -> ScriptedChatModel:
        def respond(messages: list[BaseMessage]) -> AIMessage:
            position = sum(isinstance(m, AIMessage) for m in current_turn(messages))
            return calls(("pay", {"amount": 500}, "p1")) if position == 0 else reply("done")

        return ScriptedChatModel(respond=respond)

    def agent(self, store_url: str, approvers: int = 2) -> SymfonicAgent:
        rule = needs_approval(audience="payments", approvers=approvers)
        return SymfonicAgent(
            model=self.model(), tools=[self.pay], approval={"pay": rule}, store=store_url
        )


def _result(done: TurnResult) -> tuple[str, str]:
    (event,) = [e for e in done.events if isinstance(e, ToolResultEvent)]
    return event.status, event.content


async def test_alice_asks_carol_approves_and_waits_dave_approves_and_it_runs_once(
    store_url: str,
) -> None:
    bank = Bank()
    async with bank.agent(store_url) as agent:
        asked = await agent.run("pay 500", principal=ALICE)
        assert asked.pause is not None
        token = asked.pause.token
        assert (asked.pause.approvals_required, asked.pause.approvals) == (2, ())
        assert asked.pause.allow_requester is False

        with pytest.raises(OwnRequest, match="alice asked for this call and may not approve"):
            await agent.resume(token, APPROVE, principal=ALICE)

        voted = await agent.resume(token, APPROVE, principal=CAROL)
        assert voted.status == "paused" and voted.pause is not None
        assert voted.session_id == asked.session_id
        assert [v.principal for v in voted.pause.approvals] == ["carol"]
        assert bank.paid == []
        listed = await agent.pauses(DAVE)
        assert [(p.pause_id, [v.principal for v in p.approvals]) for p in listed] == [
            (asked.pause.pause_id, ["carol"])
        ]

        again = await agent.resume(token, APPROVE, principal=CAROL)
        assert again.status == "paused" and again.pause is not None
        assert again.pause.approvals == voted.pause.approvals  # the same vote, counted once

        done = await agent.resume(token, APPROVE, principal=DAVE)
        assert done.status == "complete" and done.answer == "done"
        assert _result(done) == ("ok", "paid 500")
        assert bank.paid == [500]
        row = await agent.store.get_pause(asked.pause.pause_id)
        assert row is not None and row.state is PauseState.PUBLISHED
        assert row.answered_by == "dave"
        assert [v.principal for v in row.approvals] == ["carol", "dave"]

        await agent.store.seal_audit()
        records = await agent.store.audit_records(limit=100)
        votes = [(r.event, r.principal) for r in records if r.event in ("approved", "answered")]
        assert votes == [("approved", "carol"), ("approved", "dave"), ("answered", "dave")]


async def test_an_edit_resets_the_count_and_the_edited_call_runs_once(store_url: str) -> None:
    bank = Bank()
    async with bank.agent(store_url) as one, bank.agent(store_url) as two:
        asked = await one.run("pay 500", principal=ALICE)
        assert asked.pause is not None
        token, pause_id, asked_digest = (
            asked.pause.token,
            asked.pause.pause_id,
            asked.pause.args_digest,
        )
        await two.resume(token, APPROVE, principal=CAROL, args_digest=asked_digest)

        edit = {"decision": "edit", "args": {"amount": 450}}
        edited = await one.resume(token, edit, principal=DAVE, args_digest=asked_digest)
        assert edited.status == "paused" and edited.pause is not None
        assert [v.principal for v in edited.pause.approvals] == ["dave"]  # carol's no longer counts
        new_digest = edited.pause.args_digest
        assert new_digest is not None and new_digest != asked_digest
        (listed,) = await two.pauses(ERIN)
        assert (listed.args_digest, [v.principal for v in listed.approvals]) == (
            new_digest,
            ["dave"],
        )
        assert bank.paid == []

        with pytest.raises(StaleQuestion):
            await two.resume(token, APPROVE, principal=CAROL, args_digest=asked_digest)
        done = await two.resume(token, APPROVE, principal=ERIN, args_digest=new_digest)
        assert done.status == "complete"
        status, content = _result(done)
        assert status == "ok" and "paid 450" in content and "edited" in content
        assert bank.paid == [450]
        row = await two.store.get_pause(pause_id)
        assert row is not None and row.state is PauseState.PUBLISHED
        assert [v.principal for v in row.approvals] == ["dave", "erin"]

        await one.store.seal_audit()
        records = await one.store.audit_records(limit=100)
        said = [
            (r.principal, r.decision, r.args_digest, r.edited_args_digest)
            for r in records
            if r.event == "approved"
        ]
        assert said == [
            ("carol", "approve", asked_digest, None),
            ("dave", "edit", asked_digest, new_digest),
            ("erin", "approve", new_digest, None),
        ]
        checked, broken = await verify_log(one.store)
        assert broken is None and checked == len(records)


async def test_a_reject_after_one_approval_rejects(store_url: str) -> None:
    bank = Bank()
    async with bank.agent(store_url) as agent:
        asked = await agent.run("pay 500", principal=ALICE)
        assert asked.pause is not None
        await agent.resume(asked.pause.token, APPROVE, principal=CAROL)
        no = {"decision": "reject", "reason": "not this month"}
        done = await agent.resume(asked.pause.token, no, principal=DAVE)
        assert done.status == "complete"
        status, content = _result(done)
        assert status == "rejected" and "not this month" in content
        assert bank.paid == []
        row = await agent.store.get_pause(asked.pause.pause_id)
        assert row is not None and (row.state, row.answered_by) == (PauseState.PUBLISHED, "dave")


async def test_a_requester_may_approve_when_the_rule_allows_it(store_url: str) -> None:
    bank = Bank()
    rule = needs_approval(audience="payments", approvers=2, allow_requester=True)
    agent = SymfonicAgent(
        model=bank.model(), tools=[bank.pay], approval={"pay": rule}, store=store_url
    )
    async with agent:
        asked = await agent.run("pay 500", principal=ALICE)
        assert asked.pause is not None
        await agent.resume(asked.pause.token, APPROVE, principal=ALICE)
        done = await agent.resume(asked.pause.token, APPROVE, principal=CAROL)
        assert done.status == "complete" and bank.paid == [500]


def test_several_approvers_need_an_audience_and_a_count() -> None:
    with pytest.raises(ConfigurationError, match="needs an audience scope"):
        needs_approval(approvers=2)
    with pytest.raises(ConfigurationError, match="1 or more"):
        needs_approval(audience="payments", approvers=0)


@pytest.mark.postgres
async def test_the_last_two_approvals_on_two_workers_run_the_tool_once(
    postgres_url: str,
) -> None:
    bank = Bank()
    async with (
        bank.agent(postgres_url, approvers=3) as one,
        bank.agent(postgres_url, approvers=3) as two,
    ):
        for _ in range(3):
            asked = await one.run("pay 500", principal=ALICE)
            assert asked.pause is not None
            token = asked.pause.token
            await two.resume(token, APPROVE, principal=CAROL)
            outcomes: list[str] = []

            async def approve(
                worker: SymfonicAgent,
                who: Principal,
                token: str = token,
                outcomes: list[str] = outcomes,
            ) -> None:
                try:
                    outcomes.append((await worker.resume(token, APPROVE, principal=who)).status)
                except PauseAlreadyClaimed:
                    outcomes.append("already claimed")

            async with anyio.create_task_group() as group:
                group.start_soon(approve, one, DAVE)
                group.start_soon(approve, two, ERIN)
            # One claimed and ran it; the other was counted first, or lost to the
            # claim and was refused or given the published outcome again.
            assert "complete" in outcomes and len(outcomes) == 2
        assert bank.paid == [500, 500, 500]


async def test_a_counted_approval_is_a_line_on_the_pauses_log(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    bank = Bank()
    async with bank.agent(store_url) as agent:
        asked = await agent.run("pay 500", principal=ALICE)
        assert asked.pause is not None
        with caplog.at_level(logging.INFO, logger="symfonic.pauses"):
            await agent.resume(asked.pause.token, APPROVE, principal=CAROL)
    [line] = [r.getMessage() for r in caplog.records if " approved " in r.getMessage()]
    assert line == (
        f"pause {asked.pause.pause_id} approved by carol: an approval was counted, "
        "1 of the 2 it needs; it waits for the rest"
    )
