"""On a resumed turn the model reads every tool result under its tool's name.

Providers show a tool message to the model by its ``name``; a resumed round's
observations are rebuilt from the checkpoint, and each must carry the name of the
tool its call named -- the gated tool that ran, the one the person rejected, and
the calls the round never dispatched -- and a gated tool that failed on resume is
an error, as it would be in an unpaused round.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from symfonic import SymfonicAgent
from symfonic.testing import ScriptedChatModel, calls, reply

pytestmark = pytest.mark.anyio


def _seeing(script: Sequence[AIMessage]) -> tuple[ScriptedChatModel, list[list[BaseMessage]]]:
    """A scripted model that also keeps every transcript it was sent."""
    seen: list[list[BaseMessage]] = []
    scripted = ScriptedChatModel.from_script(script)

    def respond(messages: list[BaseMessage]) -> AIMessage | str:
        seen.append(list(messages))
        return scripted.respond(messages)

    return ScriptedChatModel(respond=respond), seen


def _results(messages: Sequence[BaseMessage]) -> dict[str, tuple[str | None, str]]:
    return {m.tool_call_id: (m.name, m.status) for m in messages if isinstance(m, ToolMessage)}


def send_payment(amount: int, to: str) -> str:
    """Send money."""
    if amount < 0:
        raise ValueError("a payment cannot be negative")
    return f"sent {amount} to {to}"


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


@pytest.mark.parametrize("decision", ["approve", "reject"])
async def test_the_resumed_round_names_every_tool_result(store_url: str, decision: str) -> None:
    model, seen = _seeing(
        [
            calls(
                ("send_payment", {"amount": 5, "to": "bob"}, "c_pay"),
                ("lookup", {"q": "rates"}, "c_look"),
            ),
            reply("Done."),
        ]
    )
    async with SymfonicAgent(
        model=model, tools=[send_payment, lookup], approval={"send_payment"}, store=store_url
    ) as agent:
        paused = await agent.run("pay bob 5")
        assert paused.pause is not None
        done = await agent.resume(paused.pause.token, {"decision": decision})
    assert done.status == "complete"
    assert _results(seen[-1]) == {
        "c_pay": ("send_payment", "success"),
        "c_look": ("lookup", "success"),
    }


async def test_a_gated_tool_that_fails_on_resume_is_an_error_the_model_reads(
    store_url: str,
) -> None:
    model, seen = _seeing(
        [calls(("send_payment", {"amount": -5, "to": "bob"}, "c_pay")), reply("It failed.")]
    )
    async with SymfonicAgent(
        model=model, tools=[send_payment], approval={"send_payment"}, store=store_url
    ) as agent:
        paused = await agent.run("pay bob -5")
        assert paused.pause is not None
        done = await agent.resume(paused.pause.token, {"decision": "approve"})
    assert done.status == "complete"
    assert _results(seen[-1]) == {"c_pay": ("send_payment", "error")}
