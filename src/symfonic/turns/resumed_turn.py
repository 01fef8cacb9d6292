"""One selected-root resume: what it publishes, and what it settles on failure.

The final answer is read from the kernel's raw done result through the same
``answer_of_result`` the first-turn stream publishes with, never from the
projected ``ResponseCompleteEvent`` text. A resumed turn that stops at the tool
limit or with an empty answer is therefore refused exactly as that stream
refuses it, and publishes nothing.

Once the host reports that this request won the token's single-use claim, a
failure that published nothing -- an error, a late revision conflict, a client
disconnect -- moves the pause row to ``abandoned`` under a shielded cancel
scope. The token is already spent, so this never makes the pause redeemable
again; it only stops a dead row from staying ``pending``.

Each of those writes -- the publish, the second pause, the abandon -- is run
through the claim's lease once the host hands it over (``lease``): a store out
of reach is waited for while the lease keeps every other worker out, so a
restart of the database does not cost the person their answer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import anyio

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
    """State shared by the admission, the frames, and the cleanup."""

    def __init__(
        self,
        guarded: Settlement,
        principal: str,
        session_id: str,
        scope: IssuerScope,
        claim_id: str,
    ) -> None:
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

    def admission(self, *, budgeted: bool) -> Admission:
        """The host's pre-claim admission hook, observing every raw event."""

        def admit(agent: BudgetedAgent, issuer_scope: IssuerScope) -> Admitted:
            budget = admit_resume_budget(agent, issuer_scope) if budgeted else None
            self._observer = FinalObserver(None if budget is None else budget.event_guard)
            return Admitted(None if budget is None else budget.prepared_plan, self._observer)

        return admit

    async def settle(self, event: ResponseCompleteEvent | TurnPausedEvent) -> None:
        """Publish a completion, or record a second pause, before its frame."""
        settlement = self._settlement
        if isinstance(event, ResponseCompleteEvent):
            if self._observer is None or not self._observer.done:
                raise UnusableFinal("resumed turn completed without a kernel result")
            result = self._observer.result
            answer = answer_of_result(result)
            assert result is not None
            self.revision = await self._within_lease(
                lambda: settlement.publish_resume(
                    self.session_id,
                    self.claim_id,
                    answer,
                    messages=result.messages,
                )
            )
            self.settled = True
            return
        if isinstance(event, TurnPausedEvent):
            assert self._observer is not None and self._observer.result is not None
            paused = self._observer.result

            async def record() -> None:
                pause = await settlement.claimed_pause(self.session_id, self.claim_id)
                await self._settlement.record_pause(
                    self.session_id,
                    self._scope,
                    event,
                    paused,
                    pause.base_revision,
                    supersedes=self.claim_id,
                    principal=self.runs_for,
                )

            await self._within_lease(record)
            self.settled = True

    async def _within_lease(self, write: Callable[[], Awaitable[T]]) -> T:
        """One write of this claim: retried while the lease lasts, once without one."""
        return await (write() if self.lease is None else self.lease.outlast(write))

    async def release(self, failure: FailedTurn | None = None) -> None:
        """Abandon a claimed pause that published nothing; idempotent, shielded.

        ``failure``: the error it ended in, owed as ``turn.failed`` with the abandon.
        """
        if not self.claimed or self.settled:
            return
        self.settled = True
        with anyio.CancelScope(shield=True):
            try:
                await self._within_lease(
                    lambda: self._settlement.abandon(self.session_id, self.claim_id, failure)
                )
            except Exception:
                logger.warning(
                    "could not abandon a claimed pause whose resume by %s published nothing",
                    self._principal,
                    exc_info=True,
                )
