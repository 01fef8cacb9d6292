"""Cancelling a run from Python: ``agent.cancel_run``, the same rule as the HTTP route.

A run the agent started stops at its next step (its tool is cancelled, not
finished), publishes nothing, and reads ``cancelled``; a resume's pause is
``abandoned``. Another principal's cancel is ``RunNotFound``, as for an id
nobody made; a cancel of a run that already ended is ``RunNotRunning``.
"""

from __future__ import annotations

import anyio
import pytest

from http_support import APPROVE, Gate, payment_agent
from symfonic.core.contracts.errors import RunNotFound, RunNotRunning
from symfonic.core.contracts.run_events import RunState
from symfonic.core.contracts.types import PauseState

pytestmark = pytest.mark.anyio


async def test_cancel_run_stops_a_running_turn_which_publishes_nothing(store_url: str) -> None:
    gate = Gate()
    agent = payment_agent(store_url, tool=gate.pay, approval=())
    async with agent, anyio.create_task_group() as tasks:
        run = await agent.start("pay 5", principal="alice", tasks=tasks)
        assert run.run_id is not None
        with anyio.fail_after(5):
            await gate.entered.wait()
        with pytest.raises(RunNotFound):
            await agent.cancel_run(run.run_id, "bob")
        with pytest.raises(RunNotFound):
            await agent.cancel_run("run-nobody-made", "alice")
        cancelled = await agent.cancel_run(run.run_id, "alice")
        assert cancelled.state is RunState.CANCELLED
        with anyio.fail_after(1.0):
            await gate.cancelled.wait()
            result = await run.join()
        assert result.status == "failed" and result.error is not None
        assert result.error.code == "run_cancelled"
        session = await agent.get_session(run.session_id, "alice")
        assert (session.revision, gate.calls) == (0, [])
        with pytest.raises(RunNotRunning, match="already ended"):
            await agent.cancel_run(run.run_id, "alice")
        assert (await agent.get_run(run.run_id, "alice")).state is RunState.CANCELLED
        # The session takes a new turn at once (a busy one would raise SessionBusy).
        gate.release.set()
        assert (await agent.run("pay 5", run.session_id, "alice")).answer == "Paid."
    assert gate.calls == [5]


async def test_cancel_run_of_a_resume_abandons_its_pause(store_url: str) -> None:
    gate = Gate()
    agent = payment_agent(store_url, tool=gate.pay)
    async with agent, anyio.create_task_group() as tasks:
        paused = await agent.run("pay 5", principal="alice")
        assert paused.pause is not None
        run = await agent.start_resume(paused.pause.token, APPROVE, "alice", tasks=tasks)
        assert run.run_id is not None
        with anyio.fail_after(5):
            await gate.entered.wait()
        await agent.cancel_run(run.run_id, "alice")
        with anyio.fail_after(1.0):
            await gate.cancelled.wait()
            await run.wait()
        pause = await agent.store.get_pause(paused.pause.pause_id)
        assert pause is not None and pause.state is PauseState.ABANDONED
        assert (await agent.get_run(run.run_id, "alice")).state is RunState.CANCELLED
    assert gate.calls == []
