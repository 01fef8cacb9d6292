"""An agent whose one tool waits for the test to let it finish, for ``symfonic serve``.

Served as ``gated_agent:agent`` with this folder on ``PYTHONPATH``: a message
makes the model call ``gated_step`` (no approval), which says nothing until the
file named by ``SYMFONIC_TEST_GATE`` exists, so a test knows the turn is still
running while it cuts a connection or joins the run; then the model answers
with what the step returned. With ``SYMFONIC_TEST_TRAIL`` set, each step writes
to that file when it starts, ends and is cancelled. Text streams in several deltas, so a joined run
has text to replay before the step and after it.
"""

from __future__ import annotations

import os

import anyio
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from symfonic import SymfonicAgent
from symfonic.core.messages import text_of
from symfonic.testing import ScriptedChatModel, calls, current_turn, reply

GATE_WAIT = 60.0


def _trail(line: str) -> None:
    if trail := os.environ.get("SYMFONIC_TEST_TRAIL"):
        with open(trail, "a") as file:
            file.write(f"{line}\n")


async def gated_step(note: str) -> str:
    """Work on a note, once the test lets it."""
    gate = anyio.Path(os.environ["SYMFONIC_TEST_GATE"])
    _trail(f"started {note}")
    try:
        with anyio.fail_after(GATE_WAIT):
            while True:  # the test, another process, makes the file
                if await gate.exists():
                    break
                await anyio.sleep(0.05)
    except anyio.get_cancelled_exc_class():
        _trail(f"cancelled {note}")
        raise
    _trail(f"ended {note}")
    return f"stepped on {note}"


def respond(messages: list[BaseMessage]) -> AIMessage:
    turn = current_turn(messages)
    results = [m for m in turn if isinstance(m, ToolMessage)]
    if results:
        return reply(f"finished after {text_of(results[-1])}")
    return calls(("gated_step", {"note": text_of(turn[0])}, None), text="Starting the step now.")


agent = SymfonicAgent(name="gated", model=ScriptedChatModel(respond=respond), tools=[gated_step])
