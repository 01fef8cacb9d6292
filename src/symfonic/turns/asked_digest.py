"""Which question an answer was given to: an approval whose `args_digest` is not the pause's is
refused before the claim, so the token stays usable.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from symfonic.capabilities.human.turnstate import TurnCheckpointStore
from symfonic.core.args_digest import args_digest
from symfonic.core.contracts.errors import StaleQuestion
from symfonic.core.contracts.store import PauseRecord, Store
from symfonic.core.contracts.types import Answer, AnswerStatus, InteractionKind


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
