"""The agent every worker process runs: scripted, so any worker continues any turn.

The model is a pure function of the transcript (as a real deployment's model is
the same on every worker): "ask ..." asks the person a question, "work ..." calls
``slow_work``, which needs approval, "busy ..." calls ``busy_work``, which does
not, "pay ..." calls ``pay``, which needs approval and prints what it paid; once a
tool answered, it replies with what the tool said. Either tool
announces that it started (a ``{"started": note}`` line on stdout, the worker's
reply channel, when ``SYMFONIC_TEST_ANNOUNCE_WORK`` is set), and that it was
cancelled (``{"cancelled": note}``), and takes ``SYMFONIC_TEST_WORK_SECONDS``,
so a test can kill or cancel its worker's turn while it runs. With
``SYMFONIC_TEST_DELEGATING`` set, a worker runs a parent agent that hands every
message to that agent as its delegate. ``symfonic serve
workers.agents:served_agent`` serves the agent on the store the command names.
"""

from __future__ import annotations

import json
import os

import anyio
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from symfonic import SymfonicAgent
from symfonic.core.messages import text_of
from symfonic.testing import ScriptedChatModel, call, reply


def respond(messages: list[BaseMessage]) -> AIMessage | str:
    start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    asked = text_of(messages[start])
    answered = [m for m in messages[start:] if isinstance(m, ToolMessage)]
    if answered:
        return reply(f"done: {text_of(answered[-1])}")
    if asked.startswith("ask"):
        return call("ask_human", {"question": asked})
    if asked.startswith("work"):
        return call("slow_work", {"note": asked})
    if asked.startswith("busy"):
        return call("busy_work", {"note": asked})
    if asked.startswith("pay"):
        return call("pay", {"note": asked})
    return reply(f"echo: {asked}")


def _announce(what: str, note: str) -> None:
    if os.environ.get("SYMFONIC_TEST_ANNOUNCE_WORK"):
        print(json.dumps({what: note}), flush=True)


async def slow_work(note: str) -> str:
    """Do some slow work; a person must approve it first."""
    _announce("started", note)
    try:
        await anyio.sleep(float(os.environ.get("SYMFONIC_TEST_WORK_SECONDS", "0")))
    except anyio.get_cancelled_exc_class():
        _announce("cancelled", note)
        raise
    return f"worked on {note}"


async def pay(note: str, idempotency_key: str) -> str:
    """Pay once a person approves; says on stdout that it paid, and under which key."""
    await slow_work(note)
    print(json.dumps({"paid": note, "key": idempotency_key}), flush=True)
    return f"paid for {note}"


async def busy_work(note: str) -> str:
    """Do some slow work, unasked."""
    return await slow_work(note)


def delegating(messages: list[BaseMessage]) -> AIMessage | str:
    """The parent: hands every message to its helper, then says what the helper said."""
    start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    answered = [m for m in messages[start:] if isinstance(m, ToolMessage)]
    if answered:
        return reply(f"parent: {text_of(answered[-1])}")
    return call("helper", {"task": text_of(messages[start])})


def worker_agent(store: str, *, claim_lease: float = 120.0) -> SymfonicAgent:
    """The agent above; with ``SYMFONIC_TEST_DELEGATING`` set, a parent that delegates to it."""
    if os.environ.get("SYMFONIC_TEST_DELEGATING"):
        return delegating_agent(store, claim_lease=claim_lease)
    return helper_agent(store, claim_lease=claim_lease)


def delegating_agent(store: str, *, claim_lease: float = 120.0) -> SymfonicAgent:
    return SymfonicAgent(
        name="parent",
        model=ScriptedChatModel(respond=delegating),
        delegates=[helper_agent(store, claim_lease=claim_lease).as_tool(name="helper")],
        store=store,
        claim_lease=claim_lease,
    )


def served_agent() -> SymfonicAgent:
    """The helper, for ``symfonic serve``: its store is the one the command names."""
    return helper_agent(None)


def helper_agent(store: str | None, *, claim_lease: float = 120.0) -> SymfonicAgent:
    return SymfonicAgent(
        model=ScriptedChatModel(respond=respond),
        tools=[slow_work, busy_work, pay],
        approval={"slow_work", "pay"},
        store=store,
        claim_lease=claim_lease,
    )
