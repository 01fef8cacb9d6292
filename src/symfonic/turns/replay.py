"""Replaying a resume that was already settled with this very answer: the first outcome, read
from the pause, and nothing run again.
"""

from __future__ import annotations

from symfonic.core.contracts.store import PauseRecord
from symfonic.core.contracts.types import (
    Event,
    ResponseCompleteEvent,
    TurnPausedEvent,
    TurnStartedEvent,
    asked,
)
from symfonic.turns.runtime import TurnRuntime


async def replay(agent: TurnRuntime, pause: PauseRecord) -> list[Event]:
    """The outcome an identical, already-settled resume produced, without running anything."""
    outcome = pause.outcome or {}
    started = TurnStartedEvent(
        session_id=pause.session_id,
        run_id=pause.claim_id or "",
        agent=pause.agent,
        base_revision=pause.base_revision,
        resumed=True,
    )
    if outcome.get("status") == "complete":
        return [
            started,
            ResponseCompleteEvent(answer=outcome["answer"], revision=pause.base_revision + 1),
        ]
    follow = await agent.store.get_pause(outcome["pause_id"])
    assert follow is not None
    return [
        started,
        TurnPausedEvent(**asked(follow), pause_token=agent.token_for(follow)),
    ]
