"""The guarded conversation: where turns end up, through one transaction each.

A first turn ends in :meth:`GuardedConversation.publish_turn` or
:meth:`record_pause`; a resumed turn ends through ``pauses`` (publish,
abandon) or :meth:`record_pause` with ``supersedes``. Every pause is written
together with its checkpoint, so a token handed to a client always names a pause
that some other worker can resume.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from langchain_core.messages import BaseMessage

from symfonic.capabilities.human.tokens import TokenSigner, new_pause_id
from symfonic.capabilities.human.turnstate import TurnCheckpointStore
from symfonic.core.contracts.errors import InteractionConfigurationError, PauseAbandoned
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import NewPause, PauseRecord, Store, TurnPublish
from symfonic.core.contracts.types import KernelResult, PauseState, TurnPausedEvent, asked
from symfonic.core.messages import bodies_of
from symfonic.turns.budget import IssuerScope
from symfonic.turns.pause_desk import PauseDesk
from symfonic.turns.recent_pauses import RecentPauses


class GuardedConversation:
    def __init__(self, store: Store, signer: TokenSigner, *, pause_ttl: float) -> None:
        self.store = store
        self.signer = signer
        self.pause_ttl = pause_ttl
        self.pauses = PauseDesk(store)
        self.recent = RecentPauses()

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
        stands for it.

        With ``supersedes``, recording the same second pause twice records it
        once: a retry whose first attempt committed but lost its reply finds
        the claim already superseded by this very pause, and is done.
        """
        assert result.interaction is not None
        pause = PauseRecord(
            **asked(event),
            session_id=session_id,
            principal=scope.owner,
            agent=scope.agent,
            audience=result.interaction.audience,
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
            new = NewPause(pause, checkpoint, supersedes=supersedes, run_id=run_id)
            await self.store.record_pause(new)
            self.recent.remember(pause)
        except PauseAbandoned:
            if supersedes is None:
                raise
            replaced = await self.store.claimed_pause(session_id, supersedes)
            done = (
                replaced is not None
                and replaced.state is PauseState.SUPERSEDED
                and (replaced.outcome or {}).get("pause_id") == event.pause_id
            )
            if not done:
                raise

    async def publish_turn(
        self,
        session_id: str,
        base_revision: int,
        messages: Sequence[BaseMessage],
        run_id: str,
    ) -> int:
        publish = TurnPublish(session_id, base_revision, bodies_of(messages), run_id)
        return await self.store.publish_turn(publish)
