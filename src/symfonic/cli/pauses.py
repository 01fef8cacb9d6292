"""``symfonic pauses``: list the pauses you may answer, and answer them one by one.

Each pause is answered as in ``symfonic chat`` (:mod:`symfonic.cli.answering`),
an approval's arguments shown as a table under its question and an edit
starting from them (the listing asks for each pause's details to have them).
A pause the service refuses to take an answer for (answered elsewhere, expired)
is said in one line and the next one asked; the command then exits 1, so a
script sees that not every answer was taken. Ctrl-C at a prompt leaves that
pause waiting, says so and exits 130.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from symfonic.cli.answering import answer_pause
from symfonic.cli.client import DEFAULT_URL, ApiError, Client
from symfonic.cli.prompts import Ask, show_arguments
from symfonic.cli.render import TurnView
from symfonic.cli.terminal import Interrupted, Terminal, failed


def register(sub: Any) -> None:
    p = sub.add_parser("pauses", help="list and answer pending pauses")
    p.add_argument("--url", default=DEFAULT_URL, help=f"service URL (default {DEFAULT_URL})")
    p.add_argument("--list", action="store_true", help="only list them")
    p.set_defaults(run=run)


@dataclass(frozen=True)
class Reviewed:
    """How many pauses were listed, and how many of the answers the service refused."""

    listed: int
    refused: int = 0


async def review(
    client: Client, term: Terminal, *, answer: bool, ask: Ask | None = None
) -> Reviewed:
    """List the pending pauses, then (if ``answer``) answer each."""
    pending = await client.pending_pauses()
    if not pending:
        term.line("no pending pauses")
        return Reviewed(0)
    for i, pause in enumerate(pending, 1):
        # A delegate's question is answered through its caller's pause: name the delegate.
        asker = f", asked by {pause['sub_agent']}" if pause.get("sub_agent") else ""
        term.line(
            f"{pause['query']}  (session {pause['session_id']}{asker}, "
            f"expires {pause['expires_at']})",
            label=f"{i}. [{pause['kind']}] ",
            label_style="bold",
        )
        if not answer and pause["kind"] == "approval":
            show_arguments(term, pause.get("tool_args") or {})
    refused = 0
    if answer:
        for pause in pending:
            current = dict(pause.get("tool_args") or {})
            answered = await answer_pause(
                client, TurnView(term), ask or term.ask, pause, pause["token"], current=current
            )
            refused += answered.outcome == "refused"
    return Reviewed(len(pending), refused)


def run(args: argparse.Namespace) -> int:
    term = Terminal()
    client = Client(args.url)

    async def main() -> Reviewed:
        async with client:
            return await review(client, term, answer=not args.list)

    try:
        reviewed = anyio.run(main)
    except (ApiError, httpx.HTTPError) as error:
        term.quiet()
        return failed("pauses", client.explain(error))
    except EOFError:
        term.blank()
        return 0
    except Interrupted as stop:
        return term.interrupted("pauses", stop)
    return 1 if reviewed.refused else 0
