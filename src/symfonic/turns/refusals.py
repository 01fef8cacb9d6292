"""A resume's second step: everything that can refuse the answer, decided before the claim so a
refused request never spends the token, or the replay of an identical settled answer.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from symfonic.capabilities.human.answers import validate_answer
from symfonic.core.contracts.errors import (
    PauseAbandoned,
    PauseAlreadyAnswered,
    PauseAlreadyClaimed,
    PauseExpired,
    PauseForbidden,
    PauseNotFound,
    RequestError,
)
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import PauseRecord
from symfonic.core.contracts.types import Answer, AnswerStatus, Event, PauseState
from symfonic.turns.asked_digest import same_question
from symfonic.turns.quorum import refuse_approval
from symfonic.turns.replay import replay
from symfonic.turns.runtime import TurnRuntime


def same_answer(pause: PauseRecord, answer: Answer, status: AnswerStatus) -> bool:
    def canonical(value: Any) -> str:
        return json.dumps(value, sort_keys=True, default=str)

    return pause.answer_status == status and canonical(pause.answer) == canonical(answer)


def replayable(pause: PauseRecord, answer: Answer, status: AnswerStatus) -> bool:
    """A settled pause answered with this very answer: the request is a replay."""
    settled = pause.state in (PauseState.PUBLISHED, PauseState.SUPERSEDED)
    return settled and same_answer(pause, answer, status)


def refusal(pause: PauseRecord, now: datetime) -> RequestError:
    """Why a pause that is not pending and unexpired cannot be answered."""
    if pause.state is PauseState.PENDING or pause.state is PauseState.EXPIRED:
        return PauseExpired(
            f"this pause expired at {pause.expires_at.isoformat()}", pause_id=pause.pause_id
        )
    if pause.state is PauseState.ABANDONED:
        return PauseAbandoned(
            "this pause was abandoned and can no longer be answered", pause_id=pause.pause_id
        )
    if pause.state is PauseState.CLAIMED:
        return PauseAlreadyClaimed(
            f"this pause is already being answered{_by_whom(pause)}", pause_id=pause.pause_id
        )
    return PauseAlreadyAnswered(
        f"this pause was already answered{_by_whom(pause)}, with a different answer",
        pause_id=pause.pause_id,
    )


def _by_whom(pause: PauseRecord) -> str:
    """Who answered and when, for a person who may answer the pause and so may know."""
    who = f" by {pause.answered_by}" if pause.answered_by else ""
    if pause.answered_at is None:
        return who
    return f"{who} at {pause.answered_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def authorise(pause: PauseRecord, principal: Principal) -> None:
    """Refuse a delegate's own pause, and a principal who may not answer this one."""
    if pause.parent_session_id is not None:
        raise PauseNotFound(
            "the token names a delegate's pause, which is answered through its caller's pause",
            pause_id=pause.pause_id,
        )
    if not principal.may_answer(pause):
        who = pause.principal if pause.audience is None else f"the audience {pause.audience}"
        raise PauseForbidden(
            f"{principal.name} may not answer this pause: only {who} may", pause_id=pause.pause_id
        )


async def refuse_or_replay(
    agent: TurnRuntime,
    pause: PauseRecord,
    answer: Answer,
    principal: Principal,
    status: AnswerStatus,
    args_digest: str | None,
    now: datetime,
) -> list[Event] | None:
    """The replayed outcome, a refusal raised, or ``None``: the pause may be claimed."""
    authorise(pause, principal)
    if not pause.answerable(now):
        if replayable(pause, answer, status):
            return await replay(agent, pause)
        raise refusal(pause, now)
    if args_digest is not None:
        same_question(pause, args_digest)
    validate_answer(pause.response_schema, answer, status, pause.kind)
    refuse_approval(pause, answer, principal, status)
    return None


async def refuse_or_replay_lost(
    agent: TurnRuntime, pause: PauseRecord, answer: Answer, status: AnswerStatus
) -> list[Event]:
    """A lost claim: replay the winner's outcome if it settled with this answer, else refuse."""
    latest = await agent.store.get_pause(pause.pause_id) or pause
    if replayable(latest, answer, status):
        return await replay(agent, latest)
    raise refusal(latest, agent.clock())
