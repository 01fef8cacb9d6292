"""A resume: verify, validate, admit, claim, run on, then publish or release.

The order is the guarantee. Everything that can refuse the request -- a token
that does not verify, a principal who may not answer, a pause no longer
pending, an answer that fails the schema, a refused budget -- is checked before
the claim, so a refused request never spends the token. The claim is the one
conditional statement that decides the race; after it, :class:`ResumedTurn`
either publishes, records a second pause, or moves the pause to ``abandoned``,
each write retried within the claim's lease while the store is out of reach.

The steps are modules of their own: :mod:`~symfonic.turns.claim` (the checks
and the claim), :mod:`~symfonic.turns.asked_digest` (the question the answer
was given to), :mod:`~symfonic.turns.replay` (an identical answer already
settled), :mod:`~symfonic.turns.run_on` (the kernel continued from the
checkpoint), :mod:`~symfonic.turns.delegated_resume` (through a delegate first,
when the pause stands for a delegate's) and :mod:`~symfonic.turns.resumed_turn`
(the settlement).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

from symfonic.capabilities.human.answers import validate_answer
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
    TurnStartedEvent,
)
from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.core.messages import messages_of
from symfonic.turns.asked_digest import edited_digest, same_question
from symfonic.turns.claim import authorised_pause, claim_read, refusal, replayable
from symfonic.turns.delegated_resume import resume_through
from symfonic.turns.outcomes import error_event
from symfonic.turns.replay import replay
from symfonic.turns.runtime import TurnRuntime


async def resume_turn(
    agent: TurnRuntime,
    token: str,
    answer: Answer,
    principal: Principal,
    status: AnswerStatus = "resolved",
    *,
    pause: PauseRecord | None = None,
    args_digest: str | None = None,
) -> AsyncGenerator[Event, None]:
    now = agent.clock()
    pause = await authorised_pause(agent, token, principal, now, pause)
    if not pause.answerable(now):
        if replayable(pause, answer, status):
            for event in await replay(agent, pause):
                yield event
            return
        raise refusal(pause, now)
    if args_digest is not None:
        same_question(pause, args_digest)
    validate_answer(pause.response_schema, answer, status, pause.kind)
    edited = await edited_digest(agent.store, pause, answer, status)
    won = await claim_read(agent, pause, answer, principal, status, now, edited)
    if won is None:
        # Lost the race. If the winner has already settled with this very
        # answer, this request is an identical replay and gets its outcome.
        latest = await agent.store.get_pause(pause.pause_id) or pause
        if replayable(latest, answer, status):
            for event in await replay(agent, latest):
                yield event
            return
        raise refusal(latest, agent.clock())
    pause, turn, admitted, lease, claimed = won
    turn.claimed = True
    turn.lease = lease  # from here on, the claim's writes wait out an unreachable store
    # The approval rules of the rounds still to come decide for whoever sent the
    # turn's message, as recorded, never for the person answering the pause.
    recorded = claimed.turn.principal if claimed.turn is not None else None
    turn.runs_for = recorded or Principal(pause.principal)
    try:
        try:
            history = messages_of(claimed.history)
            yield TurnStartedEvent(
                session_id=pause.session_id,
                run_id=turn.claim_id,
                agent=agent.name,
                base_revision=pause.base_revision,
                resumed=True,
            )
            # The lease is checked after every yield, before any more work: a
            # consumer can hold the stream at a frame past the lease, and the
            # gated call must not run for a claim the sweeper has taken back.
            await lease.keep()
            outcome = ResumeOutcome(
                turn=claimed.turn,
                response=answer,
                tool_call_id=pause.tool_call_id,
                interrupt_id=pause.interrupt_id,
                status=status,
            )
            kernel = agent.kernel(
                pause.session_id, admitted.plan, heartbeat=lease.beat, principal=turn.runs_for
            )
            resumed = resume_through(
                kernel,
                outcome,
                agent.context(history),
                owner=pause.principal,
                answered_by=principal,
                keep=lease.keep,
            )
            async with aclosing(resumed) as events:
                async for raw in events:
                    admitted.observe(raw)
                    if isinstance(raw, KernelDone):
                        break
                    yield raw
                    await lease.keep()
            result = admitted.observe.result
            assert result is not None
            terminal: Event
            if result.stop_reason is StopReason.PAUSED:
                terminal = agent.settlement.paused_event(result, now=agent.clock())
                await turn.settle(terminal)
            else:
                terminal = ResponseCompleteEvent(answer=result.answer)
                await turn.settle(terminal)
                terminal = terminal.model_copy(update={"revision": turn.revision})
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
