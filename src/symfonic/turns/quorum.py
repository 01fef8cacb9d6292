"""A resume that is one approval among several: refused, counted as one vote, or the vote that
claims. An edit is a new proposal; a reject claims like any answer (docs/approvals.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from symfonic.capabilities.human.toolbox import ToolBox
from symfonic.capabilities.human.turnstate import TurnCheckpointStore, principal_of
from symfonic.core.contracts.errors import InvalidAnswer, OwnRequest
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import PauseRecord, Proposal, Store
from symfonic.core.contracts.types import (
    Answer,
    AnswerStatus,
    ApprovalRecordedEvent,
    InteractionKind,
    asked,
)


def approves(pause: PauseRecord, answer: Answer, status: AnswerStatus) -> bool:
    """Whether the answer approves the gated call, as it is or edited."""
    return (
        pause.kind is InteractionKind.APPROVAL
        and status == "resolved"
        and isinstance(answer, dict)
        and answer.get("decision") in ("approve", "edit")
    )


def is_vote(pause: PauseRecord, answer: Answer, status: AnswerStatus) -> bool:
    """An approval of a pause that needs several: counted before anything claims."""
    return pause.approvals_required > 1 and approves(pause, answer, status)


def refuse_approval(
    pause: PauseRecord, answer: Answer, principal: Principal, status: AnswerStatus
) -> None:
    """Raise why this approval cannot be given; nothing when it can."""
    if not approves(pause, answer, status):
        return
    if not pause.allow_requester and principal.name == pause.principal:
        raise OwnRequest(
            f"{principal.name} asked for this call and may not approve it; "
            "someone else of its audience must",
            pause_id=pause.pause_id,
        )
    edit = answer.get("decision") == "edit" and is_vote(pause, answer, status)
    if edit and pause.delegated_pause_id is not None:
        # The call is in the delegate's checkpoint, which its caller's vote cannot
        # rewrite in the same transaction.
        raise InvalidAnswer(
            f"this call was asked by a delegate and needs {pause.approvals_required} "
            "approvals; approve it as it is, or reject it with a reason",
            pause_id=pause.pause_id,
        )


async def proposal(
    store: Store,
    tools: ToolBox,
    pause: PauseRecord,
    answer: Answer,
    editor: str,
    edited_digest: str | None,
) -> Proposal | None:
    """The new proposal an edit of a call that needs several approvals makes, or
    ``None``: the answer is no edit, or it edits nothing (its call's digest is the
    pause's, so it is an approval of the arguments as they stand).

    Its question is the gate's description worded from the edited arguments, with
    the principal the first one was worded for, and the default question when the
    description fails, as when the pause was asked; a tool no rule gates any more
    keeps the question it was asked with. The checkpoint is read outside the vote's
    transaction; the store writes the proposal only if the pause's digest is still
    the one read with it, so an edit that landed in between cannot be overwritten.
    """
    if not isinstance(answer, Mapping) or answer.get("decision") != "edit":
        return None
    if edited_digest is not None and edited_digest == pause.args_digest:
        return None
    record = await store.load_checkpoint(pause.pause_id)
    if record is None:
        return None  # settled meanwhile: the vote finds the pause no longer pending
    if edited_digest is None:
        raise InvalidAnswer(
            "the edited arguments cannot be given a digest (a number too large for "
            "JSON to hold exactly), and the other approvers must approve exactly them",
            pause_id=pause.pause_id,
        )
    args = answer["args"]
    asker = principal_of(record.body.get("principal")) or Principal(pause.principal)
    tool = str(record.body["interaction"]["tool_name"])
    query = await tools.question_for(tool, args, asker) or pause.query
    edited = TurnCheckpointStore.proposed(record, args, edited_digest, editor, query)
    return Proposal(edited, edited_digest, query)


def recorded(pause: PauseRecord, token: str) -> ApprovalRecordedEvent:
    """The frame of an approval counted while the pause waits for more."""
    return ApprovalRecordedEvent(
        **asked(pause),
        pause_token=token,
        session_id=pause.session_id,
        base_revision=pause.base_revision,
    )
