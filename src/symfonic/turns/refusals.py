"""A resume's second step: everything that can refuse the answer, decided before the claim so a
refused request never spends the token, or the replay of an identical settled answer.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from symfonic.capabilities.human.answers import validate_answer
from symfonic.capabilities.human.turnstate import TurnCheckpointStore
from symfonic.core.args_digest import args_digest
from symfonic.core.contracts.errors import (
    PauseAbandoned,
    PauseAlreadyAnswered,
    PauseAlreadyClaimed,
    PauseExpired,
    PauseForbidden,
    PauseNotFound,
    RequestError,
    StaleQuestion,
)
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import PauseRecord, Store
from symfonic.core.contracts.types import Answer, AnswerStatus, Event, InteractionKind, PauseState
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


# Which question an answer was given to: an approval whose `args_digest` is not the pause's
# is refused before the claim, so the token stays usable.
def same_question(pause: PauseRecord, given: str) -> None:
    """Refuse an answer whose digest is not the pause's (compared in constant time)."""
    asked = pause.args_digest
    if asked is None or not hmac.compare_digest(asked.encode(), given.encode()):
        what = f"asks {asked}" if asked else "asks about no tool call's arguments"
        raise StaleQuestion(
            f"this answer was given to another question: it carries args_digest {given}, "
            f"and the pause {what}; read the pause again and answer what it asks",
            pause_id=pause.pause_id,
            args_digest=asked,
        )


def edited_meanwhile(pause: PauseRecord) -> StaleQuestion:
    """The refusal of an approval an edit overtook: the pause proposes other arguments now."""
    return StaleQuestion(
        "the call's arguments were edited while this approval was on its way, and "
        f"approvals of the old ones no longer count; the pause now asks {pause.args_digest}: "
        "read it again and answer what it asks",
        pause_id=pause.pause_id,
        args_digest=pause.args_digest,
    )


async def edited_digest(
    store: Store, pause: PauseRecord, answer: Answer, status: AnswerStatus
) -> str | None:
    """The digest of the call an edit runs, or ``None`` when the answer is no edit.

    The tool's name is in the checkpoint only, read here for an edit (down a
    chain of delegates, the checkpoint of the one that asked); a checkpoint does
    not change while its pause is pending.
    """
    if pause.kind is not InteractionKind.APPROVAL or status != "resolved":
        return None
    if not isinstance(answer, Mapping) or answer.get("decision") != "edit":
        return None
    edited = answer.get("args")
    if not isinstance(edited, Mapping):
        return None
    checkpoints = TurnCheckpointStore(store)
    turn = await checkpoints.load(pause.pause_id)
    while turn is not None and turn.interaction.delegated_pause_id is not None:
        turn = await checkpoints.load(turn.interaction.delegated_pause_id)
    return None if turn is None else args_digest(turn.interaction.tool_name, edited)
