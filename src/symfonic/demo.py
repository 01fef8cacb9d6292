"""The demo agent: a payments assistant, scripted so it runs offline, that looks the payee up
and must ask before it pays. An unknown payee makes it ask for bank details (a form), a missing
amount asks how much.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from pydantic import BaseModel, ConfigDict, Field

from symfonic.agent.agent import SymfonicAgent
from symfonic.capabilities.human.interactions import interaction
from symfonic.core.messages import text_of
from symfonic.testing.scripted import ScriptedChatModel, call, current_turn, reply

CONTACTS = {
    "alice": "DE89 3704 0044 0532 0130 00",
    "bob": "FR14 2004 1010 0505 0001 3M02 606",
    "carol": "NL91 ABNA 0417 1643 00",
}
_CURRENCIES = r"EUR|USD|GBP|CHF|JPY|SEK|NOK|DKK|PLN|CZK"
_PAY = re.compile(rf"pay\s+(\w+)(?:\s+(\d+(?:\.\d+)?)\s*({_CURRENCIES})?\b)?", re.IGNORECASE)
_AMOUNT = re.compile(rf"(\d+(?:\.\d+)?)\s*({_CURRENCIES})?\b", re.IGNORECASE)


class PayeeDetails(BaseModel):
    """A payee who is not among the contacts."""

    model_config = ConfigDict(title="Bank details")

    holder: str = Field(min_length=1, title="Account holder", description="Their full name.")
    iban: str = Field(
        pattern=r"^[A-Z]{2}[0-9]{2}[A-Z0-9 ]{10,30}$",
        title="IBAN",
        description="For example DE02 1203 0000 0000 2020 51.",
    )
    reference: str = Field(default="", description="What their statement should say.")


PAYEE_DETAILS = interaction(
    "payee_details", "Ask for the bank details of a payee who is not a contact.", PayeeDetails
)


def lookup_contact(name: str) -> dict[str, str]:
    """Find a contact's IBAN by their first name."""
    iban = CONTACTS.get(name.lower())
    if iban is None:
        raise LookupError(f"no contact called {name}")
    return {"name": name.title(), "iban": iban}


def send_payment(to_iban: str, amount: float, currency: str, idempotency_key: str) -> str:
    """Send a bank transfer. Needs a person's approval."""
    return f"payment pay_{idempotency_key[:10]} sent: {amount:g} {currency} to {to_iban}"


def respond(messages: list[BaseMessage]) -> AIMessage | str:
    """The scripted model: a pure function of the transcript."""
    turn = current_turn(messages)
    asked = text_of(turn[0]) if turn else ""
    match = _PAY.search(asked)
    if match is None:
        return reply(
            "I can send payments to your contacts (alice, bob, carol) or to anyone whose "
            "bank details you give me. Try: 'Pay alice 42 EUR for the design work', "
            "'Pay bob for the logo' or 'Pay dave 15 EUR'."
        )
    done = _answered(turn)
    if "send_payment" in done:
        return _reported(done["send_payment"])
    name, amount = match.group(1), match.group(2)
    currency = (match.group(3) or "EUR").upper()
    if "lookup_contact" not in done:
        return call("lookup_contact", {"name": name})
    payee = _json(done["lookup_contact"])
    if payee is None:
        if "payee_details" not in done:
            question = f"{name.title()} is not among your contacts. Whose account is it?"
            return call("payee_details", {"question": question})
        details = _json(done["payee_details"])
        if details is None or "iban" not in details:
            return reply(f"Without {name.title()}'s bank details I sent nothing.")
        payee = {"name": details.get("holder", name), "iban": details["iban"]}
    if amount is None:
        if "ask_human" not in done:
            return call("ask_human", {"question": f"How much should I pay {payee['name']}?"})
        given = _AMOUNT.search(done["ask_human"])
        if given is None:
            return reply(f"I could not read an amount in {done['ask_human']!r}; I sent nothing.")
        amount, currency = given.group(1), (given.group(2) or currency).upper()
    return call(
        "send_payment", {"to_iban": payee["iban"], "amount": float(amount), "currency": currency}
    )


def _answered(turn: list[BaseMessage]) -> dict[str, str]:
    """What each tool (or question) called in this turn answered, by the call's name."""
    names = {
        call_["id"]: call_["name"]
        for m in turn
        if isinstance(m, AIMessage)
        for call_ in m.tool_calls
    }
    return {names.get(m.tool_call_id, ""): text_of(m) for m in turn if isinstance(m, ToolMessage)}


def _reported(outcome: str) -> AIMessage | str:
    if outcome.startswith("The person rejected"):
        return reply(f"I did not send the payment. {outcome}")
    if outcome.startswith("The person declined"):
        return reply("No answer was given, so I did not send the payment.")
    return reply(f"Done. {outcome.splitlines()[-1]}")


def _json(text: str) -> dict[str, Any] | None:
    import json

    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def demo_agent(store: str | None = None) -> SymfonicAgent:
    return SymfonicAgent(
        name="assistant",
        model=ScriptedChatModel(respond=respond),
        instructions="You send payments for the user, and always ask before paying.",
        tools=[lookup_contact, send_payment],
        approval={"send_payment"},
        interactions=[PAYEE_DETAILS],
        store=store,
    )


agent = demo_agent()
