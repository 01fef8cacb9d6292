"""The demo agent with a short pause lifetime, for ``symfonic serve`` in the webhook tests.

``SYMFONIC_TEST_PAUSE_TTL`` seconds (default 5), so a test sees its pauses near
their expiry, then expire, within seconds.
"""

from __future__ import annotations

import os

from symfonic import SymfonicAgent
from symfonic.demo import lookup_contact, respond, send_payment
from symfonic.testing import ScriptedChatModel


def short_lived() -> SymfonicAgent:
    return SymfonicAgent(
        name="assistant",
        model=ScriptedChatModel(respond=respond),
        tools=[lookup_contact, send_payment],
        approval={"send_payment"},
        pause_ttl=float(os.environ.get("SYMFONIC_TEST_PAUSE_TTL", "5")),
    )
