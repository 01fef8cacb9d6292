"""``symfonic chat``: talk to a running service; pauses are answered inline."""

from __future__ import annotations

import argparse
from typing import Any

import anyio

from symfonic.cli.client import DEFAULT_URL, ApiError, Client
from symfonic.cli.prompts import Ask, answer_for
from symfonic.cli.render import show


def register(sub: Any) -> None:
    p = sub.add_parser("chat", help="chat with a running symfonic service")
    p.add_argument("--url", default=DEFAULT_URL, help=f"service URL (default {DEFAULT_URL})")
    p.add_argument("--agent", help="agent name (default: the service's first agent)")
    p.set_defaults(run=run)


async def converse(client: Client, agent: str | None, ask: Ask = input) -> None:
    session = await client.create_session(agent)
    print(f"session {session['session_id']} with agent {session['agent']}; Ctrl-D to quit\n")
    while True:
        try:
            message = ask("you: ").strip()
        except EOFError:
            print()
            return
        if not message:
            continue
        try:
            last = await show(client.turn(session["session_id"], message))
            while last is not None and last.type == "turn.paused":
                answer = answer_for(last.data, ask)
                status = "cancelled" if answer is None else "resolved"
                last = await show(client.resume(last.data["pause_token"], answer, status))
        except ApiError as error:
            print(f"refused: {error}")


def run(args: argparse.Namespace) -> int:
    async def main() -> None:
        async with Client(args.url) as client:
            await converse(client, args.agent)

    try:
        anyio.run(main)
    except OSError as error:
        print(f"cannot reach {args.url}: {error}")
        return 1
    return 0
