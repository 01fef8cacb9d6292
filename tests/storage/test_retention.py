"""Retention deletes finished sessions idle too long, and never anything still in play.

Each test builds sessions on a clock set weeks back, then prunes at the real
time on SQLite and on the real PostgreSQL: what is idle and finished goes, with
its history and pauses; a pause waiting or being answered, a turn running, or
recent activity keeps a session whole.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta

import anyio
import pytest

from symfonic import SymfonicAgent
from symfonic.agent.retention import Retention, parse_age
from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.store import Claim, PruneReport, RunRequest
from symfonic.core.contracts.types import PauseState
from symfonic.testing import ScriptedChatModel, call, reply

pytestmark = pytest.mark.anyio

NOW = datetime.now(UTC)
LONG_AGO = NOW - timedelta(days=40)
MONTH = Retention(timedelta(days=30))


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def send_payment(amount: int, to: str) -> str:
    """Send money."""
    return f"sent {amount} to {to}"


def _agent(store_url: str, clock: Clock) -> SymfonicAgent:
    model = ScriptedChatModel.from_script(
        [call("send_payment", {"amount": 5, "to": "bob"}), reply("Paid bob 5.")]
    )
    return SymfonicAgent(
        model=model,
        tools=[send_payment],
        approval={"send_payment"},
        store=store_url,
        pause_ttl=90 * 86400,
        clock=clock,
    )


async def _answered_session(agent: SymfonicAgent) -> str:
    paused = await agent.run("pay bob 5")
    assert paused.pause is not None
    done = await agent.resume(paused.pause.token, {"decision": "approve"})
    assert done.status == "complete"
    return paused.session_id


async def test_a_finished_idle_session_goes_with_its_history_and_pauses(store_url: str) -> None:
    clock = Clock(LONG_AGO)
    async with _agent(store_url, clock) as agent:
        old = await _answered_session(agent)
        clock.at = NOW - timedelta(days=1)
        recent = await _answered_session(agent)
        clock.at = NOW
        report = await agent.prune(MONTH)
        assert report == PruneReport(sessions=1, messages=4, pauses=1)
        assert await agent.store.get_session(old) is None
        assert await agent.store.history(old, 10) == []
        assert await agent.store.session_pauses(old) == []
        assert await agent.store.get_session(recent) is not None
        assert len(await agent.store.session_pauses(recent)) == 1


async def test_nothing_pending_claimed_or_running_is_ever_pruned(store_url: str) -> None:
    clock = Clock(LONG_AGO)
    async with _agent(store_url, clock) as agent:
        store = agent.store
        pending = await agent.run("pay bob 5")
        expired = await agent.run("pay bob 5")  # past its expiry, not yet swept
        claimed = await agent.run("pay bob 5")
        assert pending.pause and expired.pause and claimed.pause
        await store.claim_pause(
            Claim(
                claimed.pause.pause_id,
                "claim-1",
                "local",
                {"decision": "approve"},
                "resolved",
                LONG_AGO,
                NOW + timedelta(hours=1),
            )
        )
        session = await _answered_session(agent)
        marked = await store.begin_run(
            RunRequest(session, "run-1", now=LONG_AGO, lease_until=NOW + timedelta(hours=1))
        )
        assert marked is not None
        clock.at = NOW
        assert await agent.prune(MONTH) == PruneReport(sessions=0, messages=0, pauses=0)
        for kept in (pending, expired, claimed):
            assert kept.pause is not None
            assert await store.get_session(kept.session_id) is not None
            pause = await store.get_pause(kept.pause.pause_id)
            assert pause is not None
            assert pause.state in (PauseState.PENDING, PauseState.CLAIMED)
            assert await store.load_checkpoint(kept.pause.pause_id) is not None
        assert await store.get_session(session) is not None


async def test_a_recent_answer_keeps_an_old_session(store_url: str) -> None:
    clock = Clock(LONG_AGO)
    async with _agent(store_url, clock) as agent:
        paused = await agent.run("pay bob 5")
        assert paused.pause is not None
        clock.at = NOW - timedelta(days=2)
        await agent.resume(paused.pause.token, {"decision": "approve"})
        clock.at = NOW
        assert (await agent.prune(MONTH)).sessions == 0
        clock.at = NOW + timedelta(days=31)
        assert (await agent.prune(MONTH)).sessions == 1


async def test_keep_answered_leaves_the_audit_without_the_session(store_url: str) -> None:
    clock = Clock(LONG_AGO)
    async with _agent(store_url, clock) as agent:
        answered = await agent.run("pay bob 5")
        assert answered.pause is not None
        await agent.resume(answered.pause.token, {"decision": "approve"})
        clock.at = NOW
        report = await agent.prune(Retention(timedelta(days=30), keep_answered=True))
        assert report == PruneReport(sessions=1, messages=4, pauses=0)
        assert await agent.store.get_session(answered.session_id) is None
        audit = await agent.store.get_pause(answered.pause.pause_id)
        assert audit is not None
        assert (audit.answered_by, audit.answer) == ("local", {"decision": "approve"})
        assert await agent.store.load_checkpoint(answered.pause.pause_id) is None


async def test_a_backlog_is_pruned_in_batches(store_url: str) -> None:
    clock = Clock(LONG_AGO)
    async with _agent(store_url, clock) as agent:
        for _ in range(7):
            await _answered_session(agent)
        clock.at = NOW
        batches: list[int] = []
        report = await agent.prune(
            Retention(timedelta(days=30), batch=3), lambda b: batches.append(b.sessions)
        )
        assert batches == [3, 3, 1]
        assert report == PruneReport(sessions=7, messages=28, pauses=7)


def test_ages_are_read_in_days_hours_and_minutes() -> None:
    assert parse_age("30d") == timedelta(days=30)
    assert parse_age("12h") == timedelta(hours=12)
    assert parse_age("90m") == timedelta(minutes=90)
    for bad in ("30", "0d", "-1d", "1w", "thirty days"):
        with pytest.raises(ConfigurationError, match="not an age"):
            parse_age(bad)


async def test_symfonic_prune_deletes_from_the_command_line(store_url: str) -> None:
    clock = Clock(LONG_AGO)
    async with _agent(store_url, clock) as agent:
        old = await _answered_session(agent)
        waiting = await agent.run("pay bob 5")
    command = [sys.executable, "-m", "symfonic", "prune", "--older-than", "30d"]
    done = await anyio.run_process([*command, "--store", store_url], check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert "deleted 1 sessions (4 messages, 1 pauses)" in done.stdout.decode()
    async with _agent(store_url, Clock(NOW)) as agent:
        assert await agent.store.get_session(old) is None
        assert await agent.store.get_session(waiting.session_id) is not None
    bad = await anyio.run_process([*command[:-1], "soon"], check=False)
    assert bad.returncode == 2
    assert bad.stderr.decode().strip() == (
        "symfonic prune: 'soon' is not an age: write a whole number and a unit, "
        "e.g. 30d, 12h or 90m"
    )


def test_serve_takes_a_retention_and_keeps_everything_without_one() -> None:
    from symfonic.cli.main import parser
    from symfonic.cli.serve import retention_of

    def of(*argv: str) -> Retention | None:
        return retention_of(parser().parse_args(["serve", *argv]))

    assert of() is None
    assert of("--retention", "30d", "--keep-answered") == Retention(
        timedelta(days=30), keep_answered=True
    )
    with pytest.raises(ConfigurationError, match="--keep-answered needs --retention"):
        of("--keep-answered")
