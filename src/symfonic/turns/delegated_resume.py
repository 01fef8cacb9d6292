"""Resuming a pause that stands for a delegate's: the delegate is claimed, run on and settled
first, then the caller goes on with its answer or pauses again on its new question.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import replace
from datetime import timedelta

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
from symfonic.core.messages import messages_of
from symfonic.kernel.delegates import Delegated
from symfonic.kernel.loop import Kernel
from symfonic.turns.budget import IssuerScope
from symfonic.turns.continuation import continue_from, kernel_resume, paused_again
from symfonic.turns.delegation import (
    BoundDelegate,
    child_plan,
    delegated_interaction,
    failed_observation,
)
from symfonic.turns.lease import ClaimLease, Heartbeats
from symfonic.turns.resumed_turn import ResumedTurn

RenewClaims = Callable[[], Awaitable[None]]
"""Renews every claim the resume already holds, up the chain of callers."""


def continue_through_delegate(
    kernel: Kernel,
    outcome: ResumeOutcome,
    history: Sequence[BaseMessage],
    *,
    owner: str,
    answered_by: Principal,
    renew_claims: RenewClaims,
) -> AsyncGenerator[RawEvent, None]:
    """Run a claimed turn on with the answer, through its delegate if its pause stands for one.

    ``owner``: the session's owner (a delegate's session has the same);
    ``answered_by``: who answered.
    """
    checkpoint = outcome.turn
    if checkpoint is None or checkpoint.interaction.delegated_pause_id is None:
        return kernel_resume(kernel, outcome, history)
    return _through_delegate(kernel, outcome, history, checkpoint, owner, answered_by, renew_claims)


async def _through_delegate(
    kernel: Kernel,
    outcome: ResumeOutcome,
    history: Sequence[BaseMessage],
    checkpoint: TurnCheckpoint,
    owner: str,
    answered_by: Principal,
    renew_claims: RenewClaims,
) -> AsyncGenerator[RawEvent, None]:
    pending = checkpoint.interaction
    delegate = kernel.delegates.get(pending.tool_name)
    if not isinstance(delegate, BoundDelegate):
        raise InteractionConfigurationError(
            f"this pause was asked through the delegate {pending.tool_name}, which this "
            "agent does not have"
        )
    rounds_left = kernel.limits.max_tool_rounds - checkpoint.counters.rounds
    step = DelegateResume(delegate, kernel, owner, answered_by, renew_claims)
    delegated = await step.claim_and_run(pending, outcome.response, outcome.status, rounds_left)
    if delegated.interaction is not None:
        # The caller's round stays stopped at the same call, on the new question.
        yield paused_again(checkpoint, delegated.interaction)
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


class DelegateResume:
    """One delegate's pause, claimed and run on, for the caller's claimed pause."""

    def __init__(
        self,
        delegate: BoundDelegate,
        caller: Kernel,
        owner: str,
        answered_by: Principal,
        renew_claims: RenewClaims,
    ) -> None:
        self._delegate = delegate
        self._caller = caller
        self._owner = owner
        self._answered_by = answered_by
        self._renew_callers = renew_claims

    async def claim_and_run(
        self, pending: PendingInteraction, answer: Answer, status: AnswerStatus, rounds_left: int
    ) -> Delegated:
        """Claim the delegate's pause with the person's answer, run it on, and settle it.

        The claim is the root's single conditional statement; a lost reply is left
        to the lease, which lapses with the caller's.
        """
        host = self._delegate.host
        assert pending.delegated_pause_id is not None
        claim_id = uuid.uuid4().hex
        now = host.clock()
        until = now + timedelta(seconds=host.claim_lease)
        request = Claim(
            pending.delegated_pause_id, claim_id, self._answered_by.name, answer, status, now, until
        )
        claimed = await TurnCheckpointStore(host.store).claim(request)
        if claimed is None or claimed.turn is None:
            raise PauseAbandoned(
                "the delegate's pause this pause stands for can no longer be answered",
                pause_id=pending.delegated_pause_id,
            )
        lease = ClaimLease(
            host.store,
            claimed.turn.session_id,
            claim_id,
            seconds=host.claim_lease,
            clock=host.clock,
            renewed=now,
        )
        scope = IssuerScope(self._owner, self._delegate.tool.agent.name)
        turn = ResumedTurn.won(
            host.settlement,
            scope,
            self._answered_by.name,
            lease,
            claimed,
            parent_session_id=self._caller.session_id,
        )
        try:
            async with Heartbeats(lease.renew_now, lease.interval):
                return await self._run_and_settle(turn, lease, pending, answer, status, rounds_left)
        finally:
            await turn.release()

    async def _run_and_settle(
        self,
        turn: ResumedTurn,
        lease: ClaimLease,
        pending: PendingInteraction,
        answer: Answer,
        status: AnswerStatus,
        rounds_left: int,
    ) -> Delegated:
        """The delegate's turn run on, and settled as a root's: published, or paused again.

        A delegate that cannot finish is an error observation for the caller's
        model, and its claim, settled by nothing, is released."""
        tool, host = self._delegate.tool, self._delegate.host
        checkpoint = turn.checkpoint
        assert checkpoint is not None
        outcome = ResumeOutcome(checkpoint, answer, checkpoint.interaction.tool_call_id, "", status)
        try:
            result = await self._result(turn, lease, outcome, rounds_left)
        except ModelError as error:
            return Delegated(failed_observation(tool, error), ok=False)
        if result.stop_reason is StopReason.PAUSED:
            assert result.interaction is not None
            # A claim lease later than the caller's pause, which is recorded after it.
            event = await turn.pause_again(result, now=host.clock() + lease.length)
            stop = delegated_interaction(
                tool, pending.tool_call_id, dict(pending.args), result.interaction, event.pause_id
            )
            return Delegated("", ok=True, interaction=stop)
        try:
            published = await turn.publish(result)
        except UnusableFinal as unusable:
            return Delegated(failed_observation(tool, unusable), False, result.rounds)
        return Delegated(published, ok=True, rounds=result.rounds)

    async def _result(
        self, turn: ResumedTurn, lease: ClaimLease, outcome: ResumeOutcome, rounds_left: int
    ) -> KernelResult:
        """Run the delegate's kernel on from its checkpoint, renewing every claim held."""
        agent, checkpoint = self._delegate.tool.agent, outcome.turn
        assert checkpoint is not None

        async def renew_claims() -> None:
            await self._renew_callers()
            await lease.renew_if_due()

        kernel = agent.kernel(
            checkpoint.session_id,
            child_plan(agent, checkpoint.counters.rounds + rounds_left),
            principal=turn.runs_for,
            host=self._delegate.host,
        )
        resumed = continue_through_delegate(
            kernel,
            outcome,
            agent.context(messages_of(turn.history)),
            owner=self._owner,
            answered_by=self._answered_by,
            renew_claims=renew_claims,
        )
        async with aclosing(resumed) as events:
            async for raw in events:
                if isinstance(raw, KernelDone):
                    return raw.result
                await renew_claims()
        raise ModelError("the delegate's turn ended without a result")
