"""A resume that is one approval among several: refused, counted, or the one that claims.

A pause whose rule needs N approvers (``needs_approval(..., approvers=N)``) is
answered with its one token by N distinct principals. What can refuse an
approval is decided with every other refusal, before anything is written: the
requester approving its own request where the rule says someone else must (403
``own_request``), an edit (it cannot count toward approvals others gave of the
arguments they saw), and a principal already counted (409
``already_approved``; the store decides this again under its lock). Each
approval is then one vote in the store: counted, the pause still pending, and
the resume ends with ``approval.recorded``; or, for the N-th, the claim itself,
made in the vote's transaction, so the gated call runs once however the last
approvals race. A reject is no vote: it claims the pause like any answer and
rejects it, whoever approved before.
"""

from __future__ import annotations

from datetime import UTC

from symfonic.core.contracts.errors import AlreadyApproved, InvalidAnswer, OwnRequest
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import PauseRecord
from symfonic.core.contracts.types import (
    Answer,
    AnswerStatus,
    ApprovalRecordedEvent,
    ApprovalVote,
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


def standing(pause: PauseRecord) -> str:
    """Where the vote stands, in words: ``1 of 2 approvals, by carol``."""
    given = len(pause.approvals)
    words = f"{given} of {pause.approvals_required} approvals"
    if not given:
        return words
    return f"{words}, by {', '.join(vote.principal for vote in pause.approvals)}"


def already_approved(pause: PauseRecord, vote: ApprovalVote) -> AlreadyApproved:
    return AlreadyApproved(
        f"{vote.principal} already approved this at "
        f"{vote.at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC, and one person's approval "
        f"counts once; it needs {pause.approvals_required} approvals from different people",
        pause_id=pause.pause_id,
    )


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
    if pause.approvals_required == 1:
        return
    if answer.get("decision") == "edit":
        raise InvalidAnswer(
            f"this call needs {pause.approvals_required} approvals, and an edit would not be "
            "the call the others approved; approve it as it is, or reject it with a reason",
            pause_id=pause.pause_id,
        )
    counted = next((v for v in pause.approvals if v.principal == principal.name), None)
    if counted is not None:
        raise already_approved(pause, counted)


def recorded(pause: PauseRecord, token: str) -> ApprovalRecordedEvent:
    """The frame of an approval counted while the pause waits for more."""
    return ApprovalRecordedEvent(
        **asked(pause),
        pause_token=token,
        session_id=pause.session_id,
        base_revision=pause.base_revision,
    )
