"""Resuming a pause that stands for a delegate's: the delegate runs on first, then the caller.

The caller's pause has been claimed (the one single-use claim the person's token
decides, with the budget admitted before it for the whole chain). Its round
stopped at a delegate call, so the answer is the delegate's: the delegate's own
pause is claimed next, with the same single conditional statement and the same
person recorded as having answered it, and the delegate's turn runs on from its
own checkpoint. Then:

- the delegate completes: its turn is published in its session, and its final
  answer is the observation of the caller's delegate call, from which the
  caller's turn runs on -- in this same resume;
- the delegate pauses again: its new pause supersedes its old one, and the
  caller's round stays stopped at the same call, now on the new question (the
  caller's new pause supersedes the claimed one in turn, as any second pause);
- anything fails before the delegate's turn is settled: its claim is abandoned
  under a shielded scope, and the error goes on to the caller, whose own claim
  is abandoned the same way. A delegate that cannot finish (a model error, the
  tool limit, an empty answer) is instead an error observation the caller's
  model reads, as on its first run.

The delegate settles first, so a caller that fails after its delegate published
leaves the delegate's answer in the delegate's session and abandons only its own
claim. A worker that dies mid-resume holds both claims; both leases lapse
together (the caller's is renewed while the delegate runs), and the sweeper
abandons both. A delegate's own claim whose reply is lost is left to its lease.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import replace
from datetime import timedelta

import anyio
from langchain_core.messages import BaseMessage

from symfonic.capabilities.human.turnstate import ResumeOutcome, TurnCheckpoint, TurnCheckpointStore
from symfonic.core.contracts.errors import (
    InteractionConfigurationError,
    ModelError,
    PauseAbandoned,
    UnusableFinal,
)
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import Claim
from symfonic.core.contracts.types import (
    Answer,
    AnswerStatus,
    KernelDone,
    KernelResult,
    PendingInteraction,
    RawEvent,
    StopReason,
    ToolResultEvent,
)
from symfonic.core.messages import MessageBody, message_of, messages_of
from symfonic.kernel.delegates import Delegated
from symfonic.kernel.loop import Kernel
from symfonic.turns.budget import IssuerScope
from symfonic.turns.delegation import (
    BoundDelegate,
    child_plan,
    delegated_interaction,
    failed_observation,
)
from symfonic.turns.lease import ClaimLease
from symfonic.turns.outcomes import logger
from symfonic.turns.run_on import continue_from, kernel_resume
from symfonic.turns.settlement import answer_of_result

Keep = Callable[[], Awaitable[None]]


def resume_through(
    kernel: Kernel,
    outcome: ResumeOutcome,
    history: Sequence[BaseMessage],
    *,
    owner: str,
    answered_by: Principal,
    keep: Keep,
) -> AsyncGenerator[RawEvent, None]:
    """Run a claimed turn on with the answer, through its delegate if its pause stands for one.

    ``owner``: the session's owner (a delegate's session has the same);
    ``answered_by``: who answered; ``keep``: renews the claims already held.
    """
    checkpoint = outcome.turn
    if checkpoint is None or checkpoint.interaction.delegated_pause_id is None:
        return kernel_resume(kernel, outcome, history)
    return _through_delegate(kernel, outcome, history, checkpoint, owner, answered_by, keep)


async def _through_delegate(
    kernel: Kernel,
    outcome: ResumeOutcome,
    history: Sequence[BaseMessage],
    checkpoint: TurnCheckpoint,
    owner: str,
    answered_by: Principal,
    keep: Keep,
) -> AsyncGenerator[RawEvent, None]:
    pending = checkpoint.interaction
    delegate = kernel.delegates.get(pending.tool_name)
    if not isinstance(delegate, BoundDelegate):
        raise InteractionConfigurationError(
            f"this pause was asked through the delegate {pending.tool_name}, which this "
            "agent does not have"
        )
    rounds_left = kernel.limits.max_tool_rounds - checkpoint.counters.rounds
    step = _DelegateResume(delegate, kernel, owner, answered_by, keep)
    delegated = await step.run(pending, outcome.response, outcome.status, rounds_left)
    if delegated.interaction is not None:
        # The caller's round stays stopped at the same call, on the new question.
        yield KernelDone(
            KernelResult(
                stop_reason=StopReason.PAUSED,
                messages=tuple(message_of(dict(body)) for body in checkpoint.messages),
                answer="",
                rounds=checkpoint.counters.rounds,
                model_calls=checkpoint.counters.model_calls,
                tokens=checkpoint.counters.tokens,
                interaction=delegated.interaction,
            )
        )
        return
    yield ToolResultEvent(
        tool_call_id=pending.tool_call_id,
        name=pending.tool_name,
        content=delegated.observation,
        status="ok" if delegated.ok else "error",
    )
    counters = replace(checkpoint.counters, rounds=checkpoint.counters.rounds + delegated.rounds)
    ran_on = replace(outcome, turn=replace(checkpoint, counters=counters))
    async with aclosing(
        continue_from(kernel, ran_on, delegated.observation, history, failed=not delegated.ok)
    ) as events:
        async for raw in events:
            yield raw


class _DelegateResume:
    """One delegate's pause, claimed and run on, for the caller's claimed pause."""

    def __init__(
        self,
        delegate: BoundDelegate,
        caller: Kernel,
        owner: str,
        answered_by: Principal,
        keep: Keep,
    ) -> None:
        self._delegate = delegate
        self._caller = caller
        self._owner = owner
        self._answered_by = answered_by
        self._keep = keep

    async def run(
        self, pending: PendingInteraction, answer: Answer, status: AnswerStatus, rounds_left: int
    ) -> Delegated:
        host = self._delegate.host
        assert pending.delegated_pause_id is not None
        claim_id = uuid.uuid4().hex
        now = host.clock()
        length = timedelta(seconds=host.claim_lease)
        claim = Claim(
            pending.delegated_pause_id,
            claim_id,
            self._answered_by.name,
            answer,
            status,
            now,
            now + length,
        )
        claimed = await TurnCheckpointStore(host.store).claim(claim)
        if claimed is None or claimed.turn is None:
            raise PauseAbandoned(
                "the delegate's pause this pause stands for can no longer be answered",
                pause_id=pending.delegated_pause_id,
            )
        turn = claimed.turn
        lease = ClaimLease(
            host.store,
            turn.session_id,
            claim_id,
            seconds=host.claim_lease,
            clock=host.clock,
            renewed=now,
        )
        settled = False
        try:
            delegated, settled = await self._run_on(
                pending,
                ResumeOutcome(turn, answer, turn.interaction.tool_call_id, "", status),
                claimed.history,
                lease,
                rounds_left,
            )
            return delegated
        finally:
            if not settled:
                await self._abandon(turn.session_id, claim_id)

    async def _run_on(
        self,
        pending: PendingInteraction,
        outcome: ResumeOutcome,
        history: list[MessageBody],
        lease: ClaimLease,
        rounds_left: int,
    ) -> tuple[Delegated, bool]:
        """The delegate's turn run on, and settled: (what it came to, whether it settled)."""
        tool, host = self._delegate.tool, self._delegate.host
        turn = outcome.turn
        assert turn is not None
        caller_beat = self._caller.heartbeat

        async def beat() -> None:
            if caller_beat is not None:
                await caller_beat()
            await lease.beat()

        async def keep() -> None:
            await self._keep()
            await lease.keep()

        runs_for = turn.principal or Principal(self._owner)
        kernel = tool.agent.kernel(
            turn.session_id,
            child_plan(tool.agent, turn.counters.rounds + rounds_left),
            heartbeat=beat,
            principal=runs_for,
            host=host,
        )
        context = tool.agent.context(messages_of(history))
        result: KernelResult | None = None
        try:
            resumed = resume_through(
                kernel,
                outcome,
                context,
                owner=self._owner,
                answered_by=self._answered_by,
                keep=keep,
            )
            async with aclosing(resumed) as events:
                async for raw in events:
                    if isinstance(raw, KernelDone):
                        result = raw.result
                        break
                    await keep()
        except ModelError as error:
            return Delegated(failed_observation(tool, error), ok=False), False
        assert result is not None
        if result.stop_reason is StopReason.PAUSED:
            assert result.interaction is not None
            # A claim lease later than the caller's pause, which is recorded after it.
            event = host.settlement.paused_event(result, now=host.clock() + lease.length)
            scope = IssuerScope(self._owner, tool.agent.name)
            await lease.outlast(
                lambda: host.settlement.record_pause(
                    turn.session_id,
                    scope,
                    event,
                    result,
                    turn.base_revision,
                    supersedes=lease.claim_id,
                    principal=runs_for,
                    parent_session_id=self._caller.session_id,
                )
            )
            stop = delegated_interaction(
                tool, pending.tool_call_id, dict(pending.args), result.interaction, event.pause_id
            )
            return Delegated("", ok=True, interaction=stop), True
        try:
            answer = answer_of_result(result)
        except UnusableFinal as unusable:
            return Delegated(failed_observation(tool, unusable), False, result.rounds), False
        done = result
        await lease.outlast(
            lambda: host.settlement.publish_resume(
                turn.session_id, lease.claim_id, answer, messages=done.messages
            )
        )
        return Delegated(answer, ok=True, rounds=result.rounds), True

    async def _abandon(self, session_id: str, claim_id: str) -> None:
        """Abandon the delegate's claim that settled nothing; shielded, never raising."""
        with anyio.CancelScope(shield=True):
            try:
                await self._delegate.host.settlement.abandon(session_id, claim_id)
            except Exception:
                logger.warning("could not abandon a delegate's claimed pause", exc_info=True)
