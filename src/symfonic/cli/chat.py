"""``symfonic chat``: talk to a running service, answering pauses inline; ``--session ID``
goes back to a session. Each turn runs on the service in the background and the chat
follows its events, reconnecting where it stopped when the connection drops.
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import httpx

from symfonic.cli.answering import answer_pause, still_waiting
from symfonic.cli.client import DEFAULT_URL, ApiError, Client, EventFrame
from symfonic.cli.prompts import Ask
from symfonic.cli.render import TurnView, reconnecting
from symfonic.cli.terminal import PromptInterrupted, Terminal, failed
from symfonic.client.calls import OnPendingPause


def register(sub: Any) -> None:
    p = sub.add_parser("chat", help="chat with a running symfonic service")
    p.add_argument("--url", default=DEFAULT_URL, help=f"service URL (default {DEFAULT_URL})")
    p.add_argument("--agent", help="agent name (default: the service's first agent)")
    p.add_argument("--session", metavar="ID", help="go back to this session instead of a new one")
    p.set_defaults(run=run)


class Chat:
    """One session's conversation: messages out, streams shown, pauses answered."""

    def __init__(self, client: Client, term: Terminal, ask: Ask) -> None:
        self.client, self.term, self.ask = client, term, ask
        client.on_reconnect = reconnecting(term)
        self.session_id = ""
        self.abandon_next = False

    async def start(self, agent: str | None, session_id: str | None = None) -> None:
        """Open a new session, or go back to ``session_id`` and ask its waiting pause."""
        if session_id is None:
            created = await self.client.create_session(agent)
            session_id, agent, waiting = created.session_id, created.agent, None
        else:
            session = await self.client.get_session(session_id)
            agent, waiting = session.agent, session.pending_pause
        self.session_id = session_id
        self.term.line(f"session {self.session_id} with agent {agent}; Ctrl-D to quit", "dim")
        self.term.blank()
        if waiting is not None and waiting.token is not None:
            view = TurnView(self.term)
            view.calls[waiting.tool_call_id] = dict(waiting.tool_args or {})
            await self._answer(view, EventFrame("turn.paused", waiting.model_dump(mode="json")))

    async def say(self, message: str) -> None:
        view = TurnView(self.term)
        on_pending_pause: OnPendingPause = "abandon" if self.abandon_next else "reject"
        try:
            last = await view.show(
                self.client.turn(self.session_id, message, on_pending_pause=on_pending_pause)
            )
        except ApiError as error:
            if error.code != "session_paused" or not self._abandon_wanted():
                self.term.line(self.client.explain(error), "yellow", label="refused: ")
                return
            last = await view.show(
                self.client.turn(self.session_id, message, on_pending_pause="abandon")
            )
        self.abandon_next = False
        await self._answer(view, last)

    def _abandon_wanted(self) -> bool:
        self.term.line("this session is still waiting for an answer to a pause.", "yellow")
        try:
            choice = self.ask("  abandon that pause and send your message? [y/N] ")
        except (PromptInterrupted, EOFError):
            raise PromptInterrupted(f"nothing was sent; {still_waiting(self.client)}") from None
        return choice.strip().lower() in {"y", "yes"}

    async def _answer(self, view: TurnView, last: EventFrame | None) -> None:
        while last is not None and last.type == "turn.paused":
            pause = last.data
            current = view.calls.get(pause["tool_call_id"], {})
            answered = await answer_pause(
                self.client,
                view,
                self.ask,
                pause,
                pause["token"],
                current=current,
                may_abandon=True,
            )
            if answered.outcome == "abandoned":
                self.abandon_next = True
                self.term.line("left unanswered; your next message abandons it.", "dim", indent=2)
                return
            if answered.outcome == "refused":
                return
            last = answered.last


async def converse(
    client: Client,
    agent: str | None,
    term: Terminal,
    ask: Ask | None = None,
    session_id: str | None = None,
) -> None:
    """Chat until the person presses Ctrl-D at the message prompt."""
    chat = Chat(client, term, ask or term.ask)
    await chat.start(agent, session_id)
    while True:
        try:
            message = _said(chat.ask)
            if message:
                await chat.say(message)
        except EOFError:
            term.blank()
            return


def _said(ask: Ask) -> str:
    try:
        return ask("you: ").strip()
    except PromptInterrupted:
        raise PromptInterrupted("nothing was sent") from None


def run(args: argparse.Namespace) -> int:
    term = Terminal()
    client = Client(args.url)

    async def main() -> None:
        async with client:
            await converse(client, args.agent, term, session_id=args.session)

    try:
        anyio.run(main)
    except (ApiError, httpx.HTTPError) as error:
        term.quiet()
        return failed("chat", client.explain(error))
    except PromptInterrupted as stop:
        return term.interrupted("chat", stop)
    return 0
