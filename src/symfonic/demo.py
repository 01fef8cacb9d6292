"""The demo agent: a payments assistant that must ask before it pays.

Its model is scripted, so it runs offline and always does the same thing: look
the payee up (an ordinary tool), then ask to send the payment (a tool gated by
approval), then report what happened. ``symfonic demo`` and ``symfonic serve``
(with no agent named) use it.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from symfonic.agent.agent import SymfonicAgent
from symfonic.core.messages import text_of
from symfonic.testing.scripted import ScriptedChatModel, call, current_turn, reply

CONTACTS = {
    "alice": "DE89 3704 0044 0532 0130 00",
    "bob": "FR14 2004 1010 0505 0001 3M02 606",
    "carol": "NL91 ABNA 0417 1643 00",
}
_PAY = re.compile(r"pay\s+(\w+)\s+(\d+(?:\.\d+)?)\s*(\w{3})?", re.IGNORECASE)


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
    tools = [m for m in turn if isinstance(m, ToolMessage)]
    match = _PAY.search(asked)
    if match is None:
        return reply(
            "I can send payments to your contacts (alice, bob, carol). "
            "Try: 'Pay alice 42 EUR for the design work'."
        )
    name, amount, currency = (
        match.group(1),
        float(match.group(2)),
        (match.group(3) or "EUR").upper(),
    )
    if not tools:
        return call("lookup_contact", {"name": name})
    if len(tools) == 1:
        found: dict[str, Any] | None = _json(text_of(tools[0]))
        if found is None:
            return reply(f"I could not find {name} among your contacts.")
        return call(
            "send_payment",
            {"to_iban": found["iban"], "amount": amount, "currency": currency},
        )
    outcome = text_of(tools[-1])
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
        store=store,
    )


agent = demo_agent()
