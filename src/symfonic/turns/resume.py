"""A resume, as its five steps in order: resolve, refuse or replay, claim, run, settle.

The order is the guarantee: everything that can refuse comes before the claim.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

from symfonic.capabilities.human.turnstate import ResumeOutcome
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import PauseRecord
from symfonic.core.contracts.types import (
    Answer,
    AnswerStatus,
    Event,
    KernelDone,
    ResponseCompleteEvent,
    StopReason,
    TurnPausedEvent,
    TurnStartedEvent,
)
from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.core.messages import messages_of
from symfonic.turns.claim import claim
from symfonic.turns.delegated_resume import continue_through_delegate
from symfonic.turns.lease import Heartbeats
from symfonic.turns.outcomes import error_event
from symfonic.turns.quorum import recorded
from symfonic.turns.refusals import edited_digest, refuse_or_replay, refuse_or_replay_lost
from symfonic.turns.resolve import ResolvedPause, resolve
from symfonic.turns.resumed_turn import ResumedTurn
from symfonic.turns.runtime import TurnRuntime


async def resume_turn(
    agent: TurnRuntime,
    token: str | ResolvedPause,
    answer: Answer,
    principal: Principal,
    status: AnswerStatus = "resolved",
    *,
    args_digest: str | None = None,
) -> AsyncGenerator[Event, None]:
    """Answer the token's pause and run its turn on; request errors raise before any event.

    ``token``: the token, or the pause a transport already resolved it to.
    """
    now = agent.clock()
    resolved = (
        token if isinstance(token, ResolvedPause) else await resolve(agent.settlement, token, now)
    )
    pause = resolved.pause
    replayed = await refuse_or_replay(agent, pause, answer, principal, status, args_digest, now)
    turn: ResumedTurn | None = None
    if replayed is None:
        edited = await edited_digest(agent.store, pause, answer, status)
        won = await claim(agent, pause, answer, principal, status, now, edited)
        if isinstance(won, PauseRecord):
            # An approval counted toward a quorum that still waits: nothing runs.
            yield recorded(won, resolved.token)
            return
        turn = won
        if turn is None:
            # Lost the race: an identical answer the winner settled is a replay.
            replayed = await refuse_or_replay_lost(agent, pause, answer, status)
    if turn is None:
        for event in replayed or ():
            yield event
        return
    async with aclosing(_claimed_turn(agent, turn, pause, answer, principal, status)) as events:
        async for event in events:
            yield event


async def _claimed_turn(
    agent: TurnRuntime,
    turn: ResumedTurn,
    pause: PauseRecord,
    answer: Answer,
    principal: Principal,
    status: AnswerStatus,
) -> AsyncGenerator[Event, None]:
    """The won claim's frames: started, the kernel's, then the settled outcome or an error."""
    try:
        try:
            yield TurnStartedEvent(
                session_id=pause.session_id,
                run_id=turn.claim_id,
                agent=agent.name,
                base_revision=pause.base_revision,
                resumed=True,
            )
            async with aclosing(run(agent, turn, pause, answer, principal, status)) as events:
                async for raw in events:
                    yield raw
            terminal = await settle(agent, turn)
        except Exception as error:
            failed = error_event(error)
            await turn.release(
                FailedTurn(
                    turn.claim_id,
                    pause.session_id,
                    agent.name,
                    failed.code,
                    failed.message,
                    agent.clock(),
                    pause_id=pause.pause_id,
                )
            )
            yield failed
            return
        yield terminal
    finally:
        await turn.release()


async def run(
    agent: TurnRuntime,
    turn: ResumedTurn,
    pause: PauseRecord,
    answer: Answer,
    principal: Principal,
    status: AnswerStatus,
) -> AsyncGenerator[Event, None]:
    """The kernel run on from the claimed checkpoint with the answer, up to its done result.

    The lease is checked after every yield, before any more work: a consumer
    can hold the stream at a frame past the lease, and the gated call must not
    run for a claim the sweeper has taken back.
    """
    lease = turn.lease
    assert lease is not None
    await lease.renew_if_due()
    outcome = ResumeOutcome(
        turn=turn.checkpoint,
        response=answer,
        tool_call_id=pause.tool_call_id,
        interrupt_id=pause.interrupt_id,
        status=status,
    )
    kernel = agent.kernel(pause.session_id, turn.plan, principal=turn.runs_for)
    resumed = continue_through_delegate(
        kernel,
        outcome,
        agent.context(messages_of(turn.history)),
        owner=pause.principal,
        answered_by=principal,
        renew_claims=lease.renew_if_due,
    )
    async with aclosing(resumed) as events, Heartbeats(lease.renew_now, lease.interval):
        async for raw in events:
            turn.observe(raw)
            if isinstance(raw, KernelDone):
                return
            yield raw
            await lease.renew_if_due()


async def settle(agent: TurnRuntime, turn: ResumedTurn) -> Event:
    """Publish the run's answer, or record its second pause; the frame that says which."""
    result = turn.result
    assert result is not None
    if result.stop_reason is StopReason.PAUSED:
        paused: TurnPausedEvent = await turn.pause_again(result, now=agent.clock())
        return paused
    await turn.publish(result)
    return ResponseCompleteEvent(answer=result.answer, revision=turn.revision)
