"""Agents for the inbox's browser tests, served by a real ``symfonic serve``.

The scripted model reads the user's message: ``pay NAME AMOUNT`` asks to send a
payment (an approval gate), ``ask`` asks a free-text question, ``ship`` asks for
a form with nested fields, ``twice`` pays and then asks a question. Every payment
the tool really sends is appended to the file ``INBOX_TEST_LEDGER`` names, so a
test can count how often it ran. ``payments`` is the default agent;
``quick`` is the same agent whose pauses expire after ``INBOX_TEST_QUICK_TTL``
seconds. ``approvals`` asks its approvals of the scope ``approvers``, and
``escalating`` too, then escalates each to ``team-leads`` after
``INBOX_TEST_ESCALATE_AFTER`` seconds unanswered (the approvers keep access).
``four_eyes`` needs two approvers of ``approvers``, never the one who asked, and
words its question from the call ("Pay 9 EUR to vic").
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from pydantic import BaseModel, Field

from symfonic import SymfonicAgent, escalation, interaction, needs_approval
from symfonic.capabilities.human.toolbox import Approval
from symfonic.core.messages import text_of
from symfonic.testing import ScriptedChatModel, call, current_turn, reply

_PAY = re.compile(r"pay\s+(\w+)\s+(\d+(?:\.\d+)?)", re.IGNORECASE)


def send_payment(to: str, amount: float, currency: str, idempotency_key: str) -> str:
    """Send a payment. Needs a person's approval."""
    with Path(os.environ["INBOX_TEST_LEDGER"]).open("a") as ledger:
        ledger.write(json.dumps({"to": to, "amount": amount, "currency": currency}) + "\n")
    return f"sent {amount:g} {currency} to {to}"


class Address(BaseModel):
    street: str = Field(description="Street and number.")
    city: str
    postcode: str = Field(pattern=r"^[0-9]{5}$", description="Five digits.")


class Shipping(BaseModel):
    recipient: str
    quantity: int = Field(ge=1, le=10)
    express: bool = False
    speed: str = Field(json_schema_extra={"enum": ["standard", "next-day"]})
    address: Address
    notes: list[str] = Field(default_factory=list)


SHIPPING = interaction("shipping_details", "Ask where and how to ship the order.", Shipping)


def respond(messages: list[BaseMessage]) -> AIMessage | str:
    turn = current_turn(messages)
    asked = text_of(turn[0]) if turn else ""
    results = [m for m in turn if isinstance(m, ToolMessage)]
    if asked.startswith("ask"):
        if not results:
            return call("ask_human", {"question": "Which colour should the logo be?"})
        return reply(f"I will use {text_of(results[-1])} for the logo.")
    if asked.startswith("ship"):
        if not results:
            return call("shipping_details", {"question": "Where should the order go?"})
        return reply(f"Shipping: {text_of(results[-1])}")
    match = _PAY.search(asked)
    if match is None:
        return reply("Say 'pay NAME AMOUNT', 'ask' or 'ship'.")
    args: dict[str, Any] = {
        "to": match.group(1),
        "amount": float(match.group(2)),
        "currency": "EUR",
    }
    if not results:
        return call("send_payment", args)
    if asked.startswith("twice") and len(results) == 1:
        return call("ask_human", {"question": "What should the payment reference say?"})
    return reply(f"Done: {text_of(results[-1])}")


def _agent(name: str, ttl: float, approval: Approval = ("send_payment",)) -> SymfonicAgent:
    return SymfonicAgent(
        name=name,
        model=ScriptedChatModel(respond=respond),
        instructions="Pay people when asked; always ask first.",
        tools=[send_payment],
        approval=approval,
        interactions=[SHIPPING],
        pause_ttl=ttl,
    )


payments = _agent("payments", 3600)
quick = _agent("quick", float(os.environ.get("INBOX_TEST_QUICK_TTL", "4")))
approvals = _agent("approvals", 3600, {"send_payment": needs_approval(audience="approvers")})
_LEADS = escalation(
    after=float(os.environ.get("INBOX_TEST_ESCALATE_AFTER", "2")), audience="team-leads"
)
escalating = _agent(
    "escalating",
    3600,
    {"send_payment": needs_approval(audience="approvers", escalate=[_LEADS])},
)
four_eyes = _agent(
    "four_eyes",
    3600,
    {
        "send_payment": needs_approval(
            audience="approvers",
            approvers=2,
            description=lambda a: f"Pay {a['amount']:g} {a['currency']} to {a['to']}",
        )
    },
)
