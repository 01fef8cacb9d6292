"""The question an approval asks, in words, on SQLite and PostgreSQL.

A gate's ``description`` (a text, or a rule of the call's arguments, sync or
async) is the pause's ``query``; without one the question is ``Approve pay?``
and the arguments are shown beside it, never as JSON in the headline. A
description that fails only loses its wording: the default question is asked,
the failure is logged in words, and the gate still stands. The question is
recorded with the pause, so a resume on a fresh agent never asks it again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pytest

from http_support import JSON, frames, serve
from symfonic import SymfonicAgent, needs_approval
from symfonic.testing import ScriptedChatModel, calls, reply

pytestmark = pytest.mark.anyio

APPROVE = {"decision": "approve"}
PAYMENT = {"amount": 15.0, "currency": "EUR", "to_iban": "DE02120300000000202051"}


def send_payment(amount: float, currency: str, to_iban: str) -> str:
    """Send a payment."""
    return f"sent {amount} {currency} to {to_iban}"


def _model() -> ScriptedChatModel:
    return ScriptedChatModel.from_script([calls(("send_payment", PAYMENT, "p1")), reply("done")])


def _described(args: Mapping[str, Any]) -> str:
    return f"Pay {args['amount']} {args['currency']} to {args['to_iban']}"


async def _worded(args: Mapping[str, Any]) -> str:
    return _described(args)


@pytest.mark.parametrize(
    ("approval", "question"),
    [
        ({"send_payment"}, "Approve send_payment?"),
        ({"send_payment": None}, "Approve send_payment?"),
        ({"send_payment": needs_approval()}, "Approve send_payment?"),
        ({"send_payment": needs_approval(description="Pay the supplier?")}, "Pay the supplier?"),
        (
            {"send_payment": needs_approval(description=_described)},
            "Pay 15.0 EUR to DE02120300000000202051",
        ),
        (
            {"send_payment": needs_approval(description=_worded)},
            "Pay 15.0 EUR to DE02120300000000202051",
        ),
    ],
    ids=["plain-set", "plain-mapping", "rule", "text", "function", "async-function"],
)
async def test_the_question_is_the_description_or_approve_and_the_tool_name(
    store_url: str, approval: Any, question: str
) -> None:
    agent = SymfonicAgent(
        model=_model(), tools=[send_payment], approval=approval, store=store_url
    )
    async with agent:
        paused = await agent.run("pay", principal="alice")
        assert paused.pause is not None and paused.pause.query == question
        row = await agent.store.get_pause(paused.pause.pause_id)
        assert row is not None and row.query == question


@pytest.mark.parametrize(
    ("description", "logged"),
    [
        (lambda args: args["iban"], "KeyError: there is no 'iban'"),
        (lambda args: 42, "gave a int, where the question's text is needed"),
        (lambda args: "  ", "gave an empty text"),
    ],
    ids=["raises", "not-text", "empty"],
)
async def test_a_failing_description_asks_the_default_question_and_logs_it_in_words(
    store_url: str, description: Any, logged: str, caplog: pytest.LogCaptureFixture
) -> None:
    paid: list[str] = []

    def pay(amount: float, currency: str, to_iban: str) -> str:
        """Send a payment."""
        paid.append(to_iban)
        return "sent"

    agent = SymfonicAgent(
        model=ScriptedChatModel.from_script([calls(("pay", PAYMENT, "p1")), reply("done")]),
        tools=[pay],
        approval={"pay": needs_approval(description=description)},
        store=store_url,
    )
    with caplog.at_level(logging.WARNING, logger="symfonic"):
        async with agent:
            paused = await agent.run("pay", principal="alice")
            assert paused.status == "paused" and paused.pause is not None
            assert paused.pause.query == "Approve pay?" and paid == []  # the gate still stands
            done = await agent.resume(paused.pause.token, APPROVE, principal="alice")
            assert done.status == "complete" and paid == [PAYMENT["to_iban"]]
    told = [r.getMessage() for r in caplog.records if "approval description" in r.getMessage()]
    assert len(told) == 1 and logged in told[0] and "default question" in told[0]
    assert "Traceback" not in told[0] and "KeyError('iban')" not in told[0]


async def test_a_fresh_agent_resumes_with_the_recorded_question_without_asking_again(
    store_url: str,
) -> None:
    asked: list[Mapping[str, Any]] = []

    def describe(args: Mapping[str, Any]) -> str:
        asked.append(dict(args))
        return _described(args)

    first = SymfonicAgent(
        model=_model(), tools=[send_payment], store=store_url,
        approval={"send_payment": needs_approval(description=describe)},
    )
    async with first:
        paused = await first.run("pay", principal="alice")
    assert paused.pause is not None and len(asked) == 1

    def changed(args: Mapping[str, Any]) -> str:
        asked.append(dict(args))
        return "something else"

    fresh = SymfonicAgent(
        model=_model(), tools=[send_payment], store=store_url,
        approval={"send_payment": needs_approval(description=changed)},
    )
    async with fresh:
        done = await fresh.resume(paused.pause.token, APPROVE, principal="alice")
        assert done.status == "complete"
        row = await fresh.store.get_pause(paused.pause.pause_id)
        assert row is not None and row.query == "Pay 15.0 EUR to DE02120300000000202051"
    assert len(asked) == 1


async def test_over_http_the_stream_listing_and_details_carry_the_question_and_arguments(
    store_url: str,
) -> None:
    agent = SymfonicAgent(
        model=_model(), tools=[send_payment], store=store_url,
        approval={"send_payment": needs_approval(description=_described)},
    )
    headers = {"Authorization": "Bearer key-alice"}
    async with serve(agent, api_keys="alice=key-alice") as client:
        session = (await client.post("/v1/sessions", json={}, headers=headers)).json()
        turn = await client.post(
            f"/v1/sessions/{session['session_id']}/turns", json={"message": "pay"},
            headers=headers,
        )
        paused = frames(turn.text)[-1]
        assert paused.event == "turn.paused"
        assert paused.data["query"] == "Pay 15.0 EUR to DE02120300000000202051"
        listed = await client.get("/v1/pauses", params={"details": "true"}, headers=headers)
        [pause] = listed.json()["pauses"]
        assert pause["query"] == "Pay 15.0 EUR to DE02120300000000202051"
        assert pause["tool_name"] == "send_payment" and pause["tool_args"] == PAYMENT
        body = {"token": paused.data["pause_token"], "answer": APPROVE}
        done = await client.post("/v1/resume", json=body, headers={**headers, **JSON})
        assert done.json()["status"] == "complete"
