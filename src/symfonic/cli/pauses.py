"""``symfonic pauses``: list the pauses you may answer and answer them one by one (exit 1
if the service refused any answer); ``pauses reassign ID`` hands one to another audience.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
import httpx

from symfonic.cli.answering import answer_pause
from symfonic.cli.client import DEFAULT_URL, ApiError, Client
from symfonic.cli.prompts import Ask, show_arguments
from symfonic.cli.render import TurnView, approvals_words, reconnecting
from symfonic.cli.terminal import PromptInterrupted, Terminal, failed

# What the inbox says with nothing to answer.
NOTHING_WAITING = "Nothing is waiting for you."


def register(sub: Any) -> None:
    p = sub.add_parser("pauses", help="list and answer pending pauses")
    p.add_argument("--url", default=DEFAULT_URL, help=f"service URL (default {DEFAULT_URL})")
    p.add_argument("--list", action="store_true", help="only list them")
    p.add_argument(
        "action", nargs="?", choices=("reassign",), help="reassign ID: hand a pause over"
    )
    p.add_argument("pause_id", nargs="?", help="the pause to reassign")
    p.add_argument("--audience", help="reassign: the scope that answers it from now on")
    p.add_argument("--reason", help="reassign: why, in words the audience will read")
    p.add_argument(
        "--keep-previous",
        action="store_true",
        help="reassign: the audience before keeps access too",
    )
    p.set_defaults(run=run)


def readdressed_words(readdressed: dict[str, Any] | None) -> str | None:
    """How a pause came to its audience, as the inbox says it; ``None`` if it never moved."""
    if not readdressed:
        return None
    previous = readdressed.get("previous") or "its owner"
    if readdressed["kind"] == "escalated":
        return f"escalated from {previous} after {duration_words(readdressed.get('after') or 0)}"
    by = readdressed.get("by") or "an operator"
    return f"reassigned from {previous} by {by}: {readdressed.get('reason') or ''}".rstrip(": ")


def duration_words(seconds: float) -> str:
    """``1 h``, ``15 min``, ``1 h 30 min``, ``40 s``: a step's wait as people say it."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if not hours and not minutes:
        return f"{secs} s" if whole else f"{seconds:g} s"
    parts = [f"{hours} h"] if hours else []
    return " ".join([*parts, f"{minutes} min"] if minutes else parts)


def expiry_words(expires_at: str) -> str:
    """``expires in 23 h 58 min``: when a pause expires, as the inbox says it."""
    left = (datetime.fromisoformat(expires_at) - datetime.now(UTC)).total_seconds()
    return f"expires in {duration_words(left)}" if left >= 1 else "expired"


def _asker(pause: dict[str, Any]) -> str:
    """Who asked, when it is not the agent itself: a delegate (whose question is answered
    through its caller's pause), or an MCP server mid-call, or both."""
    said = [f"asked by {pause['sub_agent']}"] if pause.get("sub_agent") else []
    if pause.get("server"):
        said.append(f"asked by MCP server {pause['server']}")
    return "".join(f", {words}" for words in said)


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
        term.line(NOTHING_WAITING)
        return Reviewed(0)
    for i, pause in enumerate(pending, 1):
        asker = _asker(pause)
        term.line(
            f"{pause['query']}  (session {pause['session_id']}{asker}, "
            f"{expiry_words(pause['expires_at'])})",
            label=f"{i}. [{pause['kind']}] ",
            label_style="bold",
        )
        for said in (approvals_words(pause), readdressed_words(pause.get("readdressed"))):
            if said:
                term.line(said, label="   ")
        if not answer and pause["kind"] == "approval":
            show_arguments(term, pause.get("tool_args") or {})
    refused = 0
    if answer:
        client.on_reconnect = reconnecting(term)
        for pause in pending:
            current = dict(pause.get("tool_args") or {})
            answered = await answer_pause(
                client, TurnView(term), ask or term.ask, pause, pause["token"], current=current
            )
            refused += answered.outcome == "refused"
    return Reviewed(len(pending), refused)


async def reassign(client: Client, term: Terminal, args: argparse.Namespace) -> Reviewed:
    pause = await client.reassign_pause(
        args.pause_id, args.audience, args.reason, keep_previous=args.keep_previous
    )
    term.line(f"pause {pause.pause_id} is now for {pause.audience}: {pause.query}")
    return Reviewed(1)


def run(args: argparse.Namespace) -> int:
    term = Terminal()
    client = Client(args.url)
    reassigning = args.action == "reassign"
    if reassigning and not (args.pause_id and args.audience and args.reason):
        return failed(
            "pauses",
            "say which pause, to whom and why: "
            "symfonic pauses reassign ID --audience SCOPE --reason TEXT",
        )

    async def main() -> Reviewed:
        async with client:
            if reassigning:
                return await reassign(client, term, args)
            return await review(client, term, answer=not args.list)

    try:
        reviewed = anyio.run(main)
    except (ApiError, httpx.HTTPError) as error:
        term.quiet()
        return failed("pauses", client.explain(error))
    except EOFError:
        term.blank()
        return 0
    except PromptInterrupted as stop:
        return term.interrupted("pauses", stop)
    return 1 if reviewed.refused else 0
