"""``symfonic pauses``: list the pauses you may answer, and answer them one by one.

An answer the service refuses (422) is explained and the question asked again;
a declined pause is shown as declined.
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import httpx

from symfonic.cli.client import DEFAULT_URL, ApiError, Client
from symfonic.cli.prompts import Ask, answer_for
from symfonic.cli.render import TurnView
from symfonic.cli.terminal import Terminal, failed


def register(sub: Any) -> None:
    p = sub.add_parser("pauses", help="list and answer pending pauses")
    p.add_argument("--url", default=DEFAULT_URL, help=f"service URL (default {DEFAULT_URL})")
    p.add_argument("--list", action="store_true", help="only list them")
    p.set_defaults(run=run)


async def _answer(client: Client, term: Terminal, ask: Ask, pause: dict[str, Any]) -> None:
    view = TurnView(term)
    current: dict[str, Any] = {}
    while True:
        reply = answer_for(pause, ask, term, current=current)
        if reply.action == "cancelled":
            view.decline(pause["tool_call_id"])
        try:
            await view.show(client.resume(pause["token"], reply.answer, reply.action))
            return
        except ApiError as error:
            if error.status != 422:
                term.line(client.explain(error), "yellow", label="refused: ")
                return
            term.line(f"{error.message}. Try again.", "yellow", label="not accepted: ", indent=2)
            if isinstance(reply.answer, dict) and "args" in reply.answer:
                current = dict(reply.answer["args"])


async def review(client: Client, term: Terminal, *, answer: bool, ask: Ask | None = None) -> int:
    """List the pending pauses, then (if ``answer``) answer each; how many there were."""
    pending = await client.pending_pauses()
    if not pending:
        term.line("no pending pauses")
        return 0
    for i, pause in enumerate(pending, 1):
        term.line(f"{pause['query']}  (session {pause['session_id']}, expires "
                  f"{pause['expires_at']})", label=f"{i}. [{pause['kind']}] ",
                  label_style="bold")
    if answer:
        for pause in pending:
            await _answer(client, term, ask or term.ask, pause)
    return len(pending)


def run(args: argparse.Namespace) -> int:
    term = Terminal()
    client = Client(args.url)

    async def main() -> None:
        async with client:
            await review(client, term, answer=not args.list)

    try:
        anyio.run(main)
    except (ApiError, httpx.HTTPError) as error:
        term.quiet()
        return failed("pauses", client.explain(error))
    except EOFError:
        term.blank()
    return 0
