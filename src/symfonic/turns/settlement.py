"""The writes a turn ends in, each one transaction, and `answer_of_result`, the one rule for
what a finished turn may publish. A pause is always written with its checkpoint.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from langchain_core.messages import BaseMessage

from symfonic.capabilities.human.tokens import TokenSigner, new_pause_id
from symfonic.capabilities.human.turnstate import TurnCheckpointStore
from symfonic.core.contracts.errors import (
    InteractionConfigurationError,
    PauseAbandoned,
    UnusableFinal,
)
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import (
    NewPause,
    PauseRecord,
    ResumePublish,
    Store,
    TurnPublish,
)
from symfonic.core.contracts.types import (
    KernelResult,
    PauseState,
    StopReason,
    TurnPausedEvent,
    asked,
)
from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.core.messages import bodies_of
from symfonic.turns.budget import IssuerScope

__all__ = ["Settlement", "UnusableFinal", "answer_of_result"]


def answer_of_result(result: KernelResult | None) -> str:
    """The publishable answer of a kernel done result, or ``UnusableFinal``."""
    if result is None:
        raise UnusableFinal("the turn ended without a kernel result", code="internal")
    if result.stop_reason is StopReason.TOOL_LIMIT:
        raise UnusableFinal(
            "the turn stopped at the tool limit before giving an answer", code="tool_limit"
        )
    if result.stop_reason is StopReason.BUDGET:
        raise UnusableFinal(
            "the turn used its model-call or token budget before giving an answer",
            code="budget_exhausted",
        )
    if result.stop_reason is not StopReason.FINAL:
        raise UnusableFinal(f"a {result.stop_reason.value} turn has no answer", code="internal")
    if not result.answer.strip():
        raise UnusableFinal("the model's final answer was empty", code="empty_answer")
    return result.answer


RECENT_PAUSES_KEPT = 1024


class RecentPauses:
    """The pauses this agent recorded and has not yet been asked to resume, trusted only for
    what never changes, so a stale entry costs a read, never a wrong answer."""

    def __init__(self, capacity: int = RECENT_PAUSES_KEPT) -> None:
        self._capacity = capacity
        self._records: OrderedDict[str, PauseRecord] = OrderedDict()

    def remember(self, pause: PauseRecord) -> None:
        """Keep ``pause``, just written, for the resume that may come here."""
        self._records[pause.pause_id] = pause
        if len(self._records) > self._capacity:
            self._records.popitem(last=False)

    def take(self, pause_id: str) -> PauseRecord | None:
        """The record of ``pause_id`` as it was written, once; ``None`` if not kept."""
        return self._records.pop(pause_id, None)

    def __len__(self) -> int:
        return len(self._records)


class Settlement:
    """An agent's store, signer and pause time to live: every write a turn ends in.

    It also keeps the records of the pauses it wrote (``recent``), for the
    resume that comes back to this agent (`RecentPauses`),
    and how to stop the background runs it runs (``running``).
    """

    def __init__(self, store: Store, signer: TokenSigner, *, pause_ttl: float) -> None:
        self.store = store
        self.signer = signer
        self.pause_ttl = pause_ttl
        self.recent = RecentPauses()
        # How to stop each background run this process runs, by run id: a turn that
        # takes its session over here stops it at once (symfonic.turns.start).
        self.running: dict[str, Callable[[], None]] = {}
        # Set while this process stops: the sessions whose next queued message it
        # did not take, left for another worker's sweep.
        self.left_for_others: set[str] | None = None

    def paused_event(self, result: KernelResult, *, now: datetime) -> TurnPausedEvent:
        """The frame announcing a pause, with a freshly minted id and token."""
        pending = result.interaction
        if pending is None:
            raise InteractionConfigurationError("a paused result must name its interaction")
        pause_id = new_pause_id()
        return TurnPausedEvent(
            pause_id=pause_id,
            pause_token=self.signer.mint(pause_id),
            interrupt_id=f"int_{pause_id}",
            tool_call_id=pending.tool_call_id,
            kind=pending.kind,
            query=pending.query,
            response_schema=pending.response_schema,
            expires_at=datetime.fromtimestamp(now.timestamp() + self.pause_ttl, UTC),
            sub_agent=pending.sub_agent,
            args_digest=pending.args_digest,
            approvals_required=pending.approvals_required,
            allow_requester=pending.allow_requester,
            server=pending.server,
        )

    async def record_pause(
        self,
        session_id: str,
        scope: IssuerScope,
        event: TurnPausedEvent,
        result: KernelResult,
        base_revision: int,
        *,
        supersedes: str | None = None,
        run_id: str | None = None,
        principal: Principal | None = None,
        parent_session_id: str | None = None,
    ) -> None:
        """Write the pause row and its checkpoint in one transaction.

        ``principal``: whose message the turn answers, kept in the checkpoint.
        ``parent_session_id``: for a delegate's own pause, the session whose pause
        stands for it. With ``supersedes`` (a claim id), the pause is the claimed
        turn's second one; recorded twice, it is recorded once.
        """
        assert result.interaction is not None
        pause = PauseRecord(
            **asked(event),
            session_id=session_id,
            principal=scope.owner,
            agent=scope.agent,
            audience=result.interaction.audience,
            escalations=result.interaction.escalate,
            base_revision=base_revision,
            state=PauseState.PENDING,
            # The agent's clock when the event was built, which its expiry counts from.
            created_at=event.expires_at - timedelta(seconds=self.pause_ttl),
            parent_session_id=parent_session_id,
            delegated_pause_id=result.interaction.delegated_pause_id,
        )
        checkpoint = TurnCheckpointStore.record_of(
            event.pause_id, session_id, base_revision, result, principal
        )
        try:
            await self.store.record_pause(
                NewPause(pause, checkpoint, supersedes=supersedes, run_id=run_id)
            )
            self.recent.remember(pause)
        except PauseAbandoned:
            if supersedes is None:
                raise
            done = await self._done_already(
                session_id,
                supersedes,
                lambda settled: (
                    settled.state is PauseState.SUPERSEDED
                    and (settled.outcome or {}).get("pause_id") == event.pause_id
                ),
            )
            if done is None:
                raise

    async def publish_turn(
        self,
        session_id: str,
        base_revision: int,
        messages: Sequence[BaseMessage],
        run_id: str,
    ) -> int:
        """Commit a first turn at ``base_revision``, ending its run; the new revision."""
        publish = TurnPublish(session_id, base_revision, bodies_of(messages), run_id)
        return await self.store.publish_turn(publish)

    async def end_run(
        self, session_id: str, run_id: str, failure: FailedTurn | None = None
    ) -> None:
        """Clear a first turn's run marker; ``failure`` is owed as ``turn.failed`` with it."""
        await self.store.end_run(session_id, run_id, failure)

    async def publish_resume(
        self,
        session_id: str,
        claim_id: str,
        answer: str,
        *,
        messages: Sequence[BaseMessage],
    ) -> int:
        """Commit a resumed turn at its pause's base revision; the new revision.

        Publishing a claim twice is publishing it once: the retry finds the pause
        already published by this very claim, and that is its answer.
        """
        try:
            publish = ResumePublish(session_id, claim_id, bodies_of(messages), answer)
            return await self.store.publish_resume(publish)
        except PauseAbandoned:
            done = await self._done_already(
                session_id, claim_id, lambda settled: settled.state is PauseState.PUBLISHED
            )
            if done is None:
                raise
            return done.base_revision + 1

    async def claimed_pause(self, session_id: str, claim_id: str) -> PauseRecord:
        """The pause this claim answers, as recorded."""
        pause = await self.store.claimed_pause(session_id, claim_id)
        if pause is None:
            raise PauseAbandoned("this claim names no pause", claim_id=claim_id)
        return pause

    async def abandon(
        self, session_id: str, claim_id: str, failure: FailedTurn | None = None
    ) -> bool:
        """Move the claimed pause to ``abandoned``; false if it already left ``claimed``.

        ``failure``: the error the turn ended in, owed as ``turn.failed`` with it.
        """
        return await self.store.abandon_claim(session_id, claim_id, failure)

    async def _done_already(
        self, session_id: str, claim_id: str, this_write: Callable[[PauseRecord], bool]
    ) -> PauseRecord | None:
        """The claimed pause, if a write refused as ``PauseAbandoned`` had in fact been done.

        The write's first attempt may have committed and lost its reply; the
        retry then finds the claim settled, by ``this_write``. Settled any other
        way (``None``), the claim is lost, and the refusal stands.
        """
        settled = await self.store.claimed_pause(session_id, claim_id)
        return settled if settled is not None and this_write(settled) else None
