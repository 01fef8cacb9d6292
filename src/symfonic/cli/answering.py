"""Answering one pause from a terminal: ask, send, and ask again until the service accepts it.

Ctrl-C or Ctrl-D while the question is asked sends nothing: the pause is left waiting,
and the person is told where to answer it later.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from symfonic.cli.client import ApiError, Client, EventFrame
from symfonic.cli.prompts import Ask, answer_for
from symfonic.cli.render import TurnView
from symfonic.cli.terminal import PromptInterrupted


def still_waiting(client: Client) -> str:
    return (
        "the pause is still waiting, nothing was answered; answer it later with "
        f"'symfonic pauses' or in the inbox at {client.base_url}/inbox"
    )


@dataclass(frozen=True)
class Answered:
    """How answering ended: the resumed stream's last frame, or why there is none."""

    outcome: Literal["answered", "abandoned", "refused"]
    last: EventFrame | None = None


async def answer_pause(
    client: Client,
    view: TurnView,
    ask: Ask,
    pause: dict[str, Any],
    token: str,
    *,
    current: dict[str, Any],
    may_abandon: bool = False,
) -> Answered:
    """Ask the person about ``pause`` and resume it with ``token`` once the answer is accepted."""
    term = view.terminal
    while True:
        try:
            reply = answer_for(pause, ask, term, current=current, may_abandon=may_abandon)
        except (PromptInterrupted, EOFError):
            raise PromptInterrupted(still_waiting(client)) from None
        if reply.action == "abandon":
            return Answered("abandoned")
        if reply.action in ("cancelled", "declined"):
            view.decline(pause["tool_call_id"])
        try:
            return Answered(
                "answered",
                await view.show(
                    client.answer(token, reply.answer, reply.action, pause.get("args_digest"))
                ),
            )
        except ApiError as error:
            if error.status != 422:
                term.line(client.explain(error), "yellow", label="refused: ")
                return Answered("refused")
            term.line(f"{error.message}. Try again.", "yellow", label="not accepted: ", indent=2)
            if isinstance(reply.answer, dict) and "args" in reply.answer:
                current = dict(reply.answer["args"])
