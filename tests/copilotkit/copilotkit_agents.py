"""The demo agent for the CopilotKit example's browser tests, with a ledger.

It is ``symfonic.demo``'s payments assistant (the same scripted dialogue the
example's README walks through), except that every payment the tool really sends
is appended to the file ``COPILOTKIT_TEST_LEDGER`` names, so a test can count how
often it ran. Paying carol takes ``COPILOTKIT_TEST_SLOW_PAYMENT`` seconds (default
0): long enough, in the two-tabs test, for a second answer to arrive while the
first is still being carried out.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from symfonic import SymfonicAgent
from symfonic.demo import CONTACTS, PAYEE_DETAILS, lookup_contact, respond
from symfonic.testing import ScriptedChatModel


def send_payment(to_iban: str, amount: float, currency: str, idempotency_key: str) -> str:
    """Send a bank transfer. Needs a person's approval."""
    if to_iban == CONTACTS["carol"]:
        time.sleep(float(os.environ.get("COPILOTKIT_TEST_SLOW_PAYMENT", "0")))
    entry = {"to_iban": to_iban, "amount": amount, "currency": currency}
    with Path(os.environ["COPILOTKIT_TEST_LEDGER"]).open("a") as ledger:
        ledger.write(json.dumps(entry) + "\n")
    return f"payment sent: {amount:g} {currency} to {to_iban}"


payments = SymfonicAgent(
    name="assistant",
    model=ScriptedChatModel(respond=respond),
    instructions="You send payments for the user, and always ask before paying.",
    tools=[lookup_contact, send_payment],
    approval={"send_payment"},
    interactions=[PAYEE_DETAILS],
)
