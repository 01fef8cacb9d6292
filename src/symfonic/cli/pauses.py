"""``symfonic pauses``: list the pauses you may answer, and answer them one by one."""

from __future__ import annotations

import argparse
from typing import Any

import anyio

from symfonic.cli.client import DEFAULT_URL, ApiError, Client
from symfonic.cli.prompts import Ask, answer_for
from symfonic.cli.render import show


def register(sub: Any) -> None:
    p = sub.add_parser("pauses", help="list and answer pending pauses")
    p.add_argument("--url", default=DEFAULT_URL, help=f"service URL (default {DEFAULT_URL})")
    p.add_argument("--list", action="store_true", help="only list them")
    p.set_defaults(run=run)


async def review(client: Client, *, answer: bool, ask: Ask = input) -> int:
    pending = await client.pending_pauses()
    if not pending:
        print("no pending pauses")
        return 0
    for i, pause in enumerate(pending, 1):
        print(
            f"{i}. [{pause['kind']}] {pause['query']}  "
            f"(session {pause['session_id']}, expires {pause['expires_at']})"
        )
    if not answer:
        return len(pending)
    for pause in pending:
        reply = answer_for(pause, ask)
        status = "cancelled" if reply is None else "resolved"
        try:
            await show(client.resume(pause["token"], reply, status))
        except ApiError as error:
            print(f"refused: {error}")
    return len(pending)


def run(args: argparse.Namespace) -> int:
    async def main() -> None:
        async with Client(args.url) as client:
            await review(client, answer=not args.list)

    try:
        anyio.run(main)
    except ApiError as error:
        print(f"refused: {error}")
        return 1
    except OSError as error:
        print(f"cannot reach {args.url}: {error}")
        return 1
    return 0
