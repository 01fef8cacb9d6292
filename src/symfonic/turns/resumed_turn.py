"""A won claim's turn, root or delegate: what it runs with, and the one write it ends in
(publish, second pause or abandon), each retried within the claim's lease.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

import anyio

from symfonic.capabilities.human.turnstate import ClaimedTurn, TurnCheckpoint
from symfonic.core.contracts.errors import UnusableFinal
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.types import (
    KernelDone,
    KernelResult,
    RawEvent,
    ResponseCompleteEvent,
    TurnPausedEvent,
)
from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.core.messages import MessageBody
from symfonic.kernel.limits import Limits
from symfonic.turns.budget import BudgetedAgent, IssuerScope, admit_resume_budget
from symfonic.turns.lease import ClaimLease
from symfonic.turns.settlement import Settlement, answer_of_result

logger = logging.getLogger(__name__)

T = TypeVar("T")


class FinalObserver:
    """Sees every raw event: applies the budget's guard and keeps the done result."""

    def __init__(self, guard: Callable[[RawEvent], None] | None) -> None:
        self._guard = guard
        self.done = False
        self.result: KernelResult | None = None

    def __call__(self, event: RawEvent) -> None:
        if self._guard is not None:
            self._guard(event)
        if isinstance(event, KernelDone):
            self.done = True
            self.result = event.result


@dataclass(frozen=True)
class Admitted:
    """What admission hands the host: the plan to run under, and the observer."""

    plan: Limits | None
    observe: FinalObserver


Admission = Callable[[BudgetedAgent, IssuerScope], Admitted]
"""The host's pre-claim hook: admit one turn for the pause's owner, or refuse it."""


class ResumedTurn:
    """State shared by the admission, the frames, and the settlement of one claim.

    Built unclaimed (the reference page's constructor) it only admits and
    settles; `won` builds the turn a claim won, with what it runs with.
    """

    def __init__(
        self,
        guarded: Settlement,
        principal: str,
        session_id: str,
        scope: IssuerScope,
        claim_id: str,
    ) -> None:
        """``guarded``: the agent's `Settlement` (named as its reference page names
        it); ``principal``: who answered; ``scope``: whose turn the pause belongs to."""
        self._settlement = guarded
        self._principal = principal
        self.session_id = session_id
        self._scope = scope
        self.claim_id = claim_id
        self._observer: FinalObserver | None = None
        self.claimed = False
        self.settled = False
        self.revision: int | None = None
        # The won claim's lease: what the writes below may wait for the store.
        self.lease: ClaimLease | None = None
        # Whose message the turn answers, read from the claimed checkpoint: a
        # second pause records it again for the resume after this one.
        self.runs_for: Principal | None = None
        self.plan: Limits | None = None
        self.checkpoint: TurnCheckpoint | None = None
        self.history: list[MessageBody] = []
        self._parent_session_id: str | None = None

    @classmethod
    def won(
        cls,
        settlement: Settlement,
        scope: IssuerScope,
        answered_by: str,
        lease: ClaimLease,
        claimed: ClaimedTurn,
        *,
        admitted: Admitted | None = None,
        parent_session_id: str | None = None,
    ) -> ResumedTurn:
        """The turn a won claim runs: its lease, its checkpoint, and whom it runs for.

        The approval rules of the rounds still to come decide for whoever sent
        the turn's message, as recorded, never for the person answering the
        pause. ``parent_session_id``: for a delegate's claimed pause, the session
        of the pause that stands for it, which its second pause is marked with.
        """
        turn = cls(settlement, answered_by, lease.session_id, scope, lease.claim_id)
        turn.claimed = True
        turn.lease = lease
        turn.checkpoint, turn.history = claimed.turn, claimed.history
        recorded = claimed.turn.principal if claimed.turn is not None else None
        turn.runs_for = recorded or Principal(scope.owner)
        if admitted is not None:
            turn._observer, turn.plan = admitted.observe, admitted.plan
        turn._parent_session_id = parent_session_id
        return turn

    def observe(self, event: RawEvent) -> None:
        """Show the admitted observer one raw event: the budget's guard, the done result."""
        if self._observer is not None:
            self._observer(event)

    @property
    def result(self) -> KernelResult | None:
        """The kernel's done result, once the admitted observer has seen it."""
        return None if self._observer is None else self._observer.result

    def admission(self, *, budgeted: bool) -> Admission:
        """The host's pre-claim admission hook, observing every raw event."""

        def admit(agent: BudgetedAgent, issuer_scope: IssuerScope) -> Admitted:
            admitted = admit_turn(agent, issuer_scope, budgeted=budgeted)
            self._observer = admitted.observe
            return admitted

        return admit

    async def settle(self, event: ResponseCompleteEvent | TurnPausedEvent) -> None:
        """Publish a completion, or record a second pause, before its frame."""
        if isinstance(event, ResponseCompleteEvent):
            if self._observer is None or not self._observer.done:
                raise UnusableFinal("resumed turn completed without a kernel result")
            await self.publish(self._observer.result)
        elif isinstance(event, TurnPausedEvent):
            assert self._observer is not None and self._observer.result is not None
            await self.record_second_pause(event, self._observer.result)

    async def publish(self, result: KernelResult | None) -> str:
        """Publish the turn's answer at the claim; the answer (``UnusableFinal``: none)."""
        answer = answer_of_result(result)
        assert result is not None
        self.revision = await self._retried(
            lambda: self._settlement.publish_resume(
                self.session_id, self.claim_id, answer, messages=result.messages
            )
        )
        self.settled = True
        return answer

    async def pause_again(self, result: KernelResult, *, now: datetime) -> TurnPausedEvent:
        """Record the turn's second pause, asked at ``now``, superseding the claimed one."""
        event = self._settlement.paused_event(result, now=now)
        await self.record_second_pause(event, result)
        return event

    async def record_second_pause(self, event: TurnPausedEvent, result: KernelResult) -> None:
        async def record() -> None:
            pause = await self._settlement.claimed_pause(self.session_id, self.claim_id)
            await self._settlement.record_pause(
                self.session_id,
                self._scope,
                event,
                result,
                pause.base_revision,
                supersedes=self.claim_id,
                principal=self.runs_for,
                parent_session_id=self._parent_session_id,
            )

        await self._retried(record)
        self.settled = True

    async def _retried(self, write: Callable[[], Awaitable[T]]) -> T:
        """One write of this claim: retried while the lease lasts, once without one."""
        return await (write() if self.lease is None else self.lease.retry_write(write))

    async def release(self, failure: FailedTurn | None = None) -> None:
        """Abandon a claimed pause that published nothing; idempotent, shielded.

        ``failure``: the error it ended in, owed as ``turn.failed`` with the abandon.
        """
        if not self.claimed or self.settled:
            return
        self.settled = True
        with anyio.CancelScope(shield=True):
            try:
                await self._retried(
                    lambda: self._settlement.abandon(self.session_id, self.claim_id, failure)
                )
            except Exception:
                logger.warning(
                    "could not abandon a claimed pause whose resume by %s published nothing",
                    self._principal,
                    exc_info=True,
                )


def admit_turn(agent: BudgetedAgent, scope: IssuerScope, *, budgeted: bool) -> Admitted:
    """Admit one turn for ``scope``'s owner (``BudgetRefused``), and its observer."""
    budget = admit_resume_budget(agent, scope) if budgeted else None
    observe = FinalObserver(None if budget is None else budget.event_guard)
    return Admitted(None if budget is None else budget.prepared_plan, observe)
