"""Who may see a run, and cancelling one: one rule for the Python and HTTP APIs.

To anyone else a run does not exist (`RunNotFound`).
"""

from __future__ import annotations

from symfonic.core.contracts.errors import RunNotFound, RunNotRunning
from symfonic.core.contracts.principal import WILDCARD, Principal
from symfonic.core.contracts.run_events import RunRecord, RunState
from symfonic.core.telemetry import logs
from symfonic.turns.runtime import TurnRuntime


async def visible_run(agent: TurnRuntime, run_id: str, principal: Principal) -> RunRecord:
    """The run, if ``principal`` may see it; `RunNotFound` otherwise."""
    record = await agent.store.run_record(run_id)
    # A rolled-back run is kept only as what its turn's publish checks: no client's.
    if record is None or record.state is RunState.FORGOTTEN:
        raise RunNotFound(f"no run {run_id!r}", run_id=run_id)
    if not await _sees(agent, principal, record):
        raise RunNotFound(f"no run {run_id!r}", run_id=run_id)
    return record


async def _sees(agent: TurnRuntime, principal: Principal, record: RunRecord) -> bool:
    if WILDCARD in principal.scopes or record.principal == principal.name:
        return True
    if record.pause_id is None:
        return False
    pause = await agent.store.get_pause(record.pause_id)
    return pause is not None and principal.may_answer(pause)


async def cancel_run(agent: TurnRuntime, run_id: str, principal: Principal) -> RunRecord:
    """Cancel the run ``principal`` may see, as it reads once cancelled.

    `RunNotRunning` when it already ended or its turn already settled:
    a cancel never undoes what was published.
    """
    record = await visible_run(agent, run_id, principal)
    # A queued message leaves its queue; one taken meanwhile is cancelled as it runs.
    dequeued = record.state is RunState.QUEUED and await agent.store.cancel_queued_turn(
        run_id, agent.clock()
    )
    if not dequeued and not await agent.store.cancel_run(run_id, agent.clock()):
        now = await agent.store.run_record(run_id) or record
        state = now.state_at(agent.clock())
        raise RunNotRunning(
            f"the run already ended ({state.value}); nothing was cancelled"
            if state is not RunState.RUNNING
            else "the run's turn already settled; nothing was cancelled",
            run_id=run_id,
        )
    if not dequeued and record.pause_id is not None:
        logs.run_cancelled(record.pause_id, record.session_id)
    return await agent.store.run_record(run_id) or record
