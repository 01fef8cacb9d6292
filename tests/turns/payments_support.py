"""An agent that pays 5 when asked, after a person approves: the resume tests' subject."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from symfonic import SymfonicAgent
from symfonic.testing import ScriptedChatModel, call, reply

APPROVE = {"decision": "approve"}


class Payments:
    """The payments the agent's tool has sent."""

    def __init__(self) -> None:
        self.sent: list[int] = []

    def send_payment(self, amount: int) -> str:
        """Send money."""
        self.sent.append(amount)
        return f"sent {amount}"


def paying_model() -> ScriptedChatModel:
    """Asks to pay 5 for any message, then says what the payment's call returned."""

    def respond(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            return call("send_payment", {"amount": 5}, id="pay")
        return reply(f"done: {last.content}" if isinstance(last, ToolMessage) else "done")

    return ScriptedChatModel(respond=respond)


def paying_agent(url: str, payments: Payments, **options: Any) -> SymfonicAgent:
    """An agent on ``url`` whose payments need approval; ``options`` go to the agent."""
    return SymfonicAgent(
        model=paying_model(), tools=[payments.send_payment], approval={"send_payment"},
        store=url, **options,
    )
