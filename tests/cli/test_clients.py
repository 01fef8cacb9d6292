"""``symfonic chat`` and ``symfonic pauses`` against the real app: pauses answered inline."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from bulk_pauses import bulk_pauses
from http_support import paused_turn, payment_agent
from symfonic import SymfonicAgent, needs_approval
from symfonic.cli.answering import answer_pause
from symfonic.cli.chat import converse
from symfonic.cli.client import Client
from symfonic.cli.pauses import Reviewed, review
from symfonic.cli.render import TurnView
from symfonic.cli.terminal import Terminal
from symfonic.core.contracts.types import PauseState
from symfonic.demo import demo_agent
from symfonic.server.app import create_app

pytestmark = pytest.mark.anyio


def typed(*lines: str) -> Callable[[str], str]:
    """An ``input`` stand-in that types ``lines``, then Ctrl-D."""
    queue: Iterator[str] = iter(lines)

    def ask(prompt: str) -> str:
        try:
            return next(queue)
        except StopIteration:
            raise EOFError from None

    return ask


@asynccontextmanager
async def running(store_url: str) -> AsyncIterator[tuple[Client, SymfonicAgent]]:
    agent = demo_agent(store_url)
    app = create_app(agent, api_keys="", sweep_interval=0)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app)
        async with Client("http://symfonic", transport=transport) as client:
            yield client, agent


async def test_chat_answers_an_approval_inline_and_the_payment_is_published(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async with running(sqlite_url) as (client, agent):
        await converse(client, None, Terminal(), typed("Pay bob 7 EUR", "a"))
        out = capsys.readouterr().out
        assert "Approve send_payment" in out
        assert "Done. payment" in out
        published = await agent.pauses("local", PauseState.PUBLISHED)
        assert len(published) == 1 and published[0].answer == {"decision": "approve"}


async def test_chat_and_pauses_show_the_question_in_words_and_the_arguments_as_a_table(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async with running(sqlite_url) as (client, agent):
        await converse(client, None, Terminal(), typed("Pay bob 7 EUR", "d"))
        chat = capsys.readouterr().out
        waiting = await agent.run("Pay alice 5 EUR")
        assert waiting.pause is not None
        await review(client, Terminal(), answer=False)
        listing = capsys.readouterr().out
    for out, amount in ((chat, "7"), (listing, "5")):
        assert "Approve send_payment?" in out and "Approve send_payment(" not in out
        rows = [line.split() for line in out.splitlines()]
        assert ["amount", amount] in rows and ["currency", "EUR"] in rows
    assert "to_iban   FR14 2004 1010 0505 0001 3M02 606" in chat
    assert "to_iban   DE89 3704 0044 0532 0130 00" in listing


async def test_pauses_send_the_digest_they_showed_and_another_is_refused_as_stale(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async with running(sqlite_url) as (client, agent):
        waiting = await agent.run("Pay alice 5 EUR")
        assert waiting.pause is not None and waiting.pause.args_digest is not None
        [pause] = await client.pending_pauses()
        assert pause["args_digest"] == waiting.pause.args_digest
        # As if the screen had shown another call than the pause now asks about.
        shown = {**pause, "args_digest": "0" * 64}
        stale = await answer_pause(
            client, TurnView(Terminal()), typed("a"), shown, pause["token"], current={}
        )
        assert stale.outcome == "refused"
        assert "another question" in capsys.readouterr().out
        assert await review(client, Terminal(), answer=True, ask=typed("a")) == Reviewed(1, 0)
        [published] = await agent.pauses("local", PauseState.PUBLISHED)
        assert published.answer == {"decision": "approve"}


async def test_chat_reject_with_reason_reaches_the_model(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async with running(sqlite_url) as (client, _):
        await converse(client, None, Terminal(), typed("Pay carol 3 EUR", "r", "not today"))
        assert "rejected this call: not today" in capsys.readouterr().out


async def test_pauses_lists_then_answers_each_pending_pause(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async with running(sqlite_url) as (client, agent):
        for name in ("alice", "bob"):
            result = await agent.run(f"Pay {name} 5 EUR")
            assert result.status == "paused"
        assert (await review(client, Terminal(), answer=False)).listed == 2
        listing = capsys.readouterr().out
        assert listing.count("[approval]") == 2 and "sfp_" not in listing  # no token shown
        assert await review(client, Terminal(), answer=True, ask=typed("a", "s")) == Reviewed(2, 0)
        published = await agent.pauses("local", PauseState.PUBLISHED)
        pending = await agent.pauses("local", PauseState.PENDING)
        # "s" declines: a cancelled answer is still an answer, and the turn goes on.
        assert len(published) == 2 and pending == []
        assert sorted(p.answer_status for p in published) == ["cancelled", "resolved"]


async def test_pauses_lists_every_pending_pause_page_after_page(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async with running(sqlite_url) as (client, agent):
        start = datetime.now(UTC) - timedelta(hours=1)
        questions = [f"Which colour for room {i}?" for i in range(620)]
        await bulk_pauses(agent.store, questions, start=start, principal="local", agent=agent.name)
        assert (await review(client, Terminal(), answer=False)).listed == 620
    listing = capsys.readouterr().out
    assert "620. [input] Which colour for room 619?" in listing


def test_version_flag_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    from symfonic.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"symfonic {version('symfonic')}"


async def test_a_message_to_a_waiting_session_offers_to_abandon_the_pause(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from symfonic.cli.chat import Chat

    async with running(sqlite_url) as (client, agent):
        waiting = await agent.run("Pay alice 5 EUR")
        assert waiting.pause is not None
        chat = Chat(client, Terminal(), typed("y", "d"))
        chat.session_id = waiting.session_id
        await chat.say("Pay bob 2 EUR")
        out = capsys.readouterr().out
        assert "still waiting for an answer" in out and "refused" not in out
        assert "← send_payment [declined]" in out
        abandoned = await agent.pauses("local", PauseState.ABANDONED)
        assert [p.pause_id for p in abandoned] == [waiting.pause.pause_id]


async def test_pauses_show_where_a_four_eyes_vote_stands_and_count_an_approval(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rule = needs_approval(audience="payments", approvers=2)
    agent = payment_agent(sqlite_url, approval={"pay": rule})
    keys = "alice=key-alice:payments,carol=key-carol:payments,dave=key-dave:payments"
    app = create_app(agent, api_keys=keys, sweep_interval=0)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url="http://symfonic") as http:
            await paused_turn(http, {"Authorization": "Bearer key-alice"})
        async with Client("http://symfonic", api_key="key-carol", transport=transport) as carol:
            assert await review(carol, Terminal(), answer=True, ask=typed("a")) == Reviewed(1, 0)
        out = capsys.readouterr().out
        assert "0 of 2 approvals" in out
        assert "counted: 1 of 2 approvals, by carol; the pause waits for the rest" in out
        async with Client("http://symfonic", api_key="key-dave", transport=transport) as dave:
            await review(dave, Terminal(), answer=False)
        assert "1 of 2 approvals, by carol" in capsys.readouterr().out
