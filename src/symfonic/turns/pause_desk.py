"""A session's pauses as the transports see them, and what a done turn may publish.

:func:`answer_of_result` is the single rule for what a finished turn publishes,
used by first turns and resumed turns alike: the answer comes from the kernel's
raw done result, and a turn that stopped at the tool limit, over its budget, or
with an empty answer is refused with :class:`UnusableFinal` and publishes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from symfonic.core.contracts.errors import PauseAbandoned, UnusableFinal
from symfonic.core.contracts.store import PauseRecord, ResumePublish, Store
from symfonic.core.contracts.types import KernelResult, PauseState, StopReason
from symfonic.core.contracts.webhooks import FailedTurn
from symfonic.core.messages import bodies_of

__all__ = ["PauseDesk", "UnusableFinal", "answer_of_result"]


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


class PauseDesk:
    """The claimed-pause transitions a resumed turn ends in; each one transaction."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def publish(
        self,
        session_id: str,
        claim_id: str,
        answer: str,
        *,
        messages: Sequence[BaseMessage],
    ) -> int:
        """Commit the resumed turn at its pause's base revision; the new revision.

        Publishing a claim twice is publishing it once: a retry whose first
        attempt committed but lost its reply finds the pause already published
        by this very claim (claim ids are never reused), and that is its answer.
        """
        try:
            publish = ResumePublish(session_id, claim_id, bodies_of(messages), answer)
            return await self._store.publish_resume(publish)
        except PauseAbandoned:
            settled = await self._store.claimed_pause(session_id, claim_id)
            if settled is not None and settled.state is PauseState.PUBLISHED:
                return settled.base_revision + 1
            raise

    async def pending(self, session_id: str, claim_id: str) -> PauseRecord:
        """The pause this claim answers, as recorded."""
        pause = await self._store.claimed_pause(session_id, claim_id)
        if pause is None:
            raise PauseAbandoned("this claim names no pause", claim_id=claim_id)
        return pause

    async def abandon(
        self, session_id: str, claim_id: str, failure: FailedTurn | None = None
    ) -> bool:
        """Move the claimed pause to ``abandoned``; false if it already left ``claimed``.

        ``failure``: the error the turn ended in, owed as ``turn.failed`` with it.
        """
        return await self._store.abandon_claim(session_id, claim_id, failure)
