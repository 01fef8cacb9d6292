"""Approval that depends on the call, through whole turns on SQLite and PostgreSQL.

A rule decides per call whether a person must approve it and which scope may:
calls it lets through run in their round like any tool; a call it gates stops
the round before anything in it runs; a rule that fails is an error the model
reads, and its round runs nothing. The decision is made once, when the round is
made, and a resume on a fresh agent takes it from the checkpoint, never from the
rule again. Every list of messages the model is sent, and every published
history, passes the strict-provider check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from http_support import JSON, frames, serve
from symfonic import PauseForbidden, Principal, SymfonicAgent, needs_approval
from symfonic.agent.cutover.rehydration import NOT_DISPATCHED
from symfonic.core.contracts.types import InteractionKind, PauseState, ToolResultEvent, TurnResult
from symfonic.core.messages import messages_of
from symfonic.testing import ScriptedChatModel, calls, current_turn, reply
from test_transcript_property import assert_strict

pytestmark = pytest.mark.anyio

FINANCE = Principal("fin", frozenset({"finance"}))
CFO = Principal("chief", frozenset({"cfo"}))
APPROVE = {"decision": "approve"}


@dataclass
class Bank:
    """The side effects a test watches, and every message list the model was sent."""

    paid: list[tuple[str, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sent: list[list[BaseMessage]] = field(default_factory=list)

    def pay(self, to: str, amount: int) -> str:
        """Pay someone an amount."""
        self.paid.append((to, amount))
        return f"paid {amount} to {to}"

    def note(self, text: str) -> str:
        """Write a note."""
        self.notes.append(text)
        return f"noted {text}"

    def model(self, *rounds: AIMessage) -> ScriptedChatModel:
        """Round i of the turn is ``rounds[i]``; past the end, a final answer."""

        def respond(messages: list[BaseMessage]) -> AIMessage:
            self.sent.append(list(messages))
            position = sum(isinstance(m, AIMessage) for m in current_turn(messages))
            return rounds[position] if position < len(rounds) else reply("done")

        return ScriptedChatModel(respond=respond)

    def check_strict(self, history: Sequence[BaseMessage] = ()) -> None:
        for i, sent in enumerate(self.sent):
            assert_strict(sent, f"model call {i}")
        assert_strict(history, "published history")


def _pay(to: str, amount: int, call_id: str) -> tuple[str, dict[str, Any], str]:
    return ("pay", {"to": to, "amount": amount}, call_id)


def _results(result: TurnResult) -> dict[str, tuple[str, str]]:
    """Each tool result of a turn: call id -> (status, content)."""
    return {
        e.tool_call_id: (e.status, e.content)
        for e in result.events
        if isinstance(e, ToolResultEvent)
    }


async def _history(agent: SymfonicAgent, result: TurnResult) -> list[BaseMessage]:
    return messages_of(await agent.store.history(result.session_id, result.revision))


def _over(limit: int) -> Callable[[Mapping[str, Any]], bool]:
    return lambda args: args["amount"] > limit


async def test_calls_below_the_threshold_run_in_their_round_and_one_above_stops_it(
    store_url: str,
) -> None:
    bank = Bank()
    agent = SymfonicAgent(
        model=bank.model(
            calls(_pay("ann", 40, "a1"), _pay("bob", 60, "a2"), ("note", {"text": "x"}, "n1")),
            calls(_pay("cat", 30, "b1"), _pay("dan", 500, "big"), _pay("eve", 20, "b3")),
            calls(_pay("cat", 30, "c1"), _pay("eve", 20, "c2")),
        ),
        tools=[bank.pay, bank.note],
        approval={"pay": needs_approval(_over(100))},
        store=store_url,
    )
    async with agent:
        paused = await agent.run("pay them", principal="alice")
        assert paused.status == "paused" and paused.pause is not None
        # The first round had nothing to approve and ran whole; the second stopped
        # at its one call over the threshold before any of its calls ran.
        assert bank.paid == [("ann", 40), ("bob", 60)] and bank.notes == ["x"]
        assert _results(paused)["a1"][0] == "ok"
        assert {"b1", "big", "b3"}.isdisjoint(_results(paused))
        assert (paused.pause.tool_call_id, paused.pause.kind) == ("big", InteractionKind.APPROVAL)
        assert paused.pause.query == "Approve pay?"
        row = await agent.store.get_pause(paused.pause.pause_id)
        assert row is not None and row.audience is None

        done = await agent.resume(paused.pause.token, APPROVE, principal="alice")
        assert done.status == "complete" and done.answer == "done"
        resumed = _results(done)
        assert resumed["big"] == ("ok", "paid 500 to dan")
        assert resumed["b1"] == ("not_dispatched", NOT_DISPATCHED)
        assert resumed["b3"] == ("not_dispatched", NOT_DISPATCHED)
        # Asked again, the small ones run in their round like any tool.
        assert (resumed["c1"][0], resumed["c2"][0]) == ("ok", "ok")
        assert bank.paid == [("ann", 40), ("bob", 60), ("dan", 500), ("cat", 30), ("eve", 20)]
        bank.check_strict(await _history(agent, done))


async def test_an_audience_chosen_per_call_decides_who_may_approve_it(store_url: str) -> None:
    bank = Bank()
    decided: list[int] = []

    async def audience(args: Mapping[str, Any]) -> str:
        decided.append(args["amount"])
        return "cfo" if args["amount"] > 1000 else "finance"

    agent = SymfonicAgent(
        model=bank.model(calls(_pay("dan", 500, "p")), calls(_pay("eve", 5000, "q"))),
        tools=[bank.pay],
        approval={"pay": needs_approval(_over(100), audience=audience)},
        store=store_url,
    )
    async with agent:
        first = await agent.run("pay dan", principal="alice")
        assert first.pause is not None
        assert (await agent.store.get_pause(first.pause.pause_id)).audience == "finance"  # type: ignore[union-attr]
        for outsider in ("alice", CFO):  # the owner, and a scope that is not this call's
            with pytest.raises(PauseForbidden):
                await agent.resume(first.pause.token, APPROVE, principal=outsider)
        assert await agent.pauses(CFO) == []
        assert [p.pause_id for p in await agent.pauses(FINANCE)] == [first.pause.pause_id]

        second = await agent.resume(first.pause.token, APPROVE, principal=FINANCE)
        assert second.pause is not None and second.pause.tool_call_id == "q"
        assert (await agent.store.get_pause(second.pause.pause_id)).audience == "cfo"  # type: ignore[union-attr]
        with pytest.raises(PauseForbidden):
            await agent.resume(second.pause.token, APPROVE, principal=FINANCE)
        done = await agent.resume(second.pause.token, APPROVE, principal=CFO)
        assert done.status == "complete"
        assert bank.paid == [("dan", 500), ("eve", 5000)]
        assert decided == [500, 5000]  # once per gated call, never on resume
        bank.check_strict(await _history(agent, done))


async def test_over_http_a_principal_without_the_calls_scope_gets_403(store_url: str) -> None:
    bank = Bank()
    agent = SymfonicAgent(
        model=bank.model(calls(_pay("dan", 5000, "p"))),
        tools=[bank.pay],
        approval={
            "pay": needs_approval(
                _over(100), audience=lambda args: "cfo" if args["amount"] > 1000 else "finance"
            )
        },
        store=store_url,
    )
    keys = "alice=key-alice,fin=key-fin:finance,chief=key-chief:cfo"
    async with serve(agent, api_keys=keys) as client:
        keys_of = ("alice", "fin", "chief")
        alice, fin, chief = ({"Authorization": f"Bearer key-{n}"} for n in keys_of)
        session = (await client.post("/v1/sessions", json={}, headers=alice)).json()["session_id"]
        turn = await client.post(
            f"/v1/sessions/{session}/turns", json={"message": "pay"}, headers=alice
        )
        paused = frames(turn.text)[-1]
        assert paused.event == "turn.paused"
        assert (await client.get("/v1/pauses", headers=fin)).json()["pauses"] == []
        listed = (await client.get("/v1/pauses", headers=chief)).json()["pauses"]
        assert [p["pause_id"] for p in listed] == [paused.data["pause_id"]]
        body = {"token": paused.data["pause_token"], "answer": APPROVE}
        for outsider in (alice, fin):
            refused = await client.post("/v1/resume", json=body, headers=outsider)
            assert refused.status_code == 403
            assert refused.json()["error"]["code"] == "forbidden"
        assert bank.paid == []
        done = await client.post("/v1/resume", json=body, headers={**chief, **JSON})
        assert done.json()["status"] == "complete"
        assert bank.paid == [("dan", 5000)]
        bank.check_strict()


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        (lambda args: args["amount"] > 100, "KeyError: there is no 'amount'"),
        (lambda args: "yes", "gave 'yes', where True"),
    ],
    ids=["raises", "answers-no-decision"],
)
async def test_a_rule_that_fails_is_an_error_the_model_reads_and_its_round_runs_nothing(
    store_url: str, rule: Callable[[Mapping[str, Any]], Any], words: str
) -> None:
    bank = Bank()
    agent = SymfonicAgent(
        model=bank.model(
            calls(("note", {"text": "before"}, "n1"), ("pay", {"to": "dan"}, "bad"),
                  _pay("eve", 5, "after")),
            calls(("note", {"text": "again"}, "n2")),
        ),
        tools=[bank.note, bank.pay],
        approval={"pay": needs_approval(rule)},
        store=store_url,
    )
    async with agent:
        done = await agent.run("pay dan", principal="alice")
        assert done.status == "complete", done.error
        results = _results(done)
        status, content = results["bad"]
        assert status == "error"
        assert content.startswith("error: the approval rule for pay ")
        assert words in content and "nothing in this round ran" in content
        assert "KeyError('amount')" not in content and "Traceback" not in content
        assert results["n1"][0] == results["after"][0] == "not_dispatched"
        assert bank.paid == [] and bank.notes == ["again"]  # the failed round ran nothing
        history = await _history(agent, done)
        # The model read the error, in the message joined to the call.
        told = {m.tool_call_id: m for m in bank.sent[1] if isinstance(m, ToolMessage)}
        assert told["bad"].status == "error" and told["bad"].content == content
        bank.check_strict(history)


async def test_a_fresh_agent_resumes_from_the_checkpoint_without_asking_the_rule_again(
    store_url: str,
) -> None:
    """The rule changed between pause and resume (a raised limit, another scope):
    the gated call keeps the decision recorded with its pause, and the rules of
    the rounds after it see the principal who sent the message, not the approver."""
    seen: list[tuple[str, frozenset[str], int]] = []

    def before(args: Mapping[str, Any], who: Principal) -> bool:
        seen.append((who.name, who.scopes, args["amount"]))
        return args["amount"] > 100 and "trusted" not in who.scopes

    def after(args: Mapping[str, Any], who: Principal) -> bool:
        seen.append((who.name, who.scopes, args["amount"]))
        return args["amount"] > 10_000

    rounds = (
        calls(_pay("cat", 30, "small"), _pay("dan", 500, "big")),
        calls(_pay("cat", 30, "small-again")),
    )
    alice = Principal("alice", frozenset({"staff"}))
    bank = Bank()
    first = SymfonicAgent(
        model=bank.model(*rounds), tools=[bank.pay], store=store_url,
        approval={"pay": needs_approval(before, audience="finance")},
    )
    async with first:
        paused = await first.run("pay them", principal=alice)
    assert paused.pause is not None and paused.pause.tool_call_id == "big"
    assert seen == [("alice", frozenset({"staff"}), 30), ("alice", frozenset({"staff"}), 500)]

    fresh = SymfonicAgent(
        model=bank.model(*rounds), tools=[bank.pay], store=store_url,
        approval={"pay": needs_approval(after, audience=lambda args: "cfo")},
    )
    async with fresh:
        with pytest.raises(PauseForbidden):  # the recorded audience, not the new one
            await fresh.resume(paused.pause.token, APPROVE, principal=CFO)
        done = await fresh.resume(paused.pause.token, APPROVE, principal=FINANCE)
        assert done.status == "complete"
        assert bank.paid == [("dan", 500), ("cat", 30)]
        # Only the new round's call was decided, for alice with her scopes.
        assert seen[2:] == [("alice", frozenset({"staff"}), 30)]
        pause = await fresh.store.get_pause(paused.pause.pause_id)
        assert pause is not None and pause.state is PauseState.PUBLISHED
        assert _results(done)["small"] == ("not_dispatched", NOT_DISPATCHED)
        bank.check_strict(await _history(fresh, done))


async def test_a_second_pause_carries_the_turns_principal_to_the_next_resume(
    store_url: str,
) -> None:
    seen: list[tuple[str, frozenset[str]]] = []

    def rule(args: Mapping[str, Any], who: Principal) -> bool:
        seen.append((who.name, who.scopes))
        return True

    bank = Bank()
    agent = SymfonicAgent(
        model=bank.model(calls(_pay("a", 1, "p1")), calls(_pay("b", 2, "p2")),
                         calls(_pay("c", 3, "p3"))),
        tools=[bank.pay], store=store_url,
        approval={"pay": needs_approval(rule, audience="finance")},
    )
    async with agent:
        result = await agent.run("pay", principal=Principal("alice", frozenset({"staff"})))
        while result.pause is not None:
            result = await agent.resume(result.pause.token, APPROVE, principal=FINANCE)
        assert result.status == "complete"
    assert seen == [("alice", frozenset({"staff"}))] * 3
    assert bank.paid == [("a", 1), ("b", 2), ("c", 3)]
    bank.check_strict()
