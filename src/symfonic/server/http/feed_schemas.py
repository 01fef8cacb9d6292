"""The live pause feed's frames as models, so the OpenAPI document and the wire cannot drift
apart; a pause in a frame is exactly the item `GET /v1/pauses` lists.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from symfonic.core.contracts.pause_views import PauseList, PauseView, ReaddressedView
from symfonic.core.contracts.readdressing import ReaddressKind
from symfonic.core.contracts.store import PauseChange, PauseRecord
from symfonic.core.contracts.types import InteractionKind, PauseState
from symfonic.server.service.pause_feed import FeedChange

SNAPSHOT_EVENT = "pauses.snapshot"
CHANGE_EVENTS = {
    PauseState.PENDING: "pause.created",
    PauseState.CLAIMED: "pause.claimed",
    PauseState.PUBLISHED: "pause.answered",
    PauseState.EXPIRED: "pause.expired",
    PauseState.ABANDONED: "pause.abandoned",
    PauseState.SUPERSEDED: "pause.superseded",
}
READDRESSED_EVENTS = {
    ReaddressKind.ESCALATED: "pause.escalated",
    ReaddressKind.REASSIGNED: "pause.reassigned",
}


APPROVED_EVENT = "pause.approved"


def event_of(change: PauseChange) -> str:
    """The SSE event name of one change."""
    if change.readdressed is not None:
        return READDRESSED_EVENTS[change.readdressed]
    if change.approved:
        return APPROVED_EVENT
    return CHANGE_EVENTS[change.state]


# The changes that name who answered.
ANSWERED = frozenset({PauseState.CLAIMED, PauseState.PUBLISHED})

Decision = Literal["approve", "edit", "reject", "answer", "decline"]


def decision_of(pause: PauseRecord) -> tuple[Decision | None, dict[str, Any] | None]:
    """How a published pause was answered, and the arguments an edit ran the call with.

    A person watching the inbox is told "rejected by bob", not a bare "answered":
    the word comes from the stored answer, which the claim wrote with the state.
    """
    if pause.answer_status is None:
        return None, None
    if pause.answer_status in ("cancelled", "declined"):
        return "decline", None
    answer = pause.answer
    if pause.kind != InteractionKind.APPROVAL or not isinstance(answer, dict):
        return "answer", None
    decision = answer.get("decision")
    if decision == "edit" and isinstance(answer.get("args"), dict):
        return "edit", answer["args"]
    if decision in ("approve", "reject"):
        return decision, None
    return "answer", None


class PauseSnapshot(PauseList):
    """``pauses.snapshot``: the first page of what the caller may answer now, as
    ``GET /v1/pauses`` lists it; pass `next_cursor` to that listing for the rest."""


class PauseChangeEvent(BaseModel):
    """``pause.created`` … ``pause.superseded``: one pause moved to ``state`` at ``at``;
    ``pause.escalated`` and ``pause.reassigned``: a pending pause handed to another audience;
    ``pause.approved``: an approval counted toward a pause that needs several, which
    still waits (its ``approvals`` say who approved so far)."""

    pause_id: str
    session_id: str
    agent: str
    state: PauseState = Field(description="The state the pause moved to.")
    at: datetime
    answered_by: str | None = Field(
        default=None,
        description="pause.claimed and pause.answered: the principal who answered.",
    )
    decision: Decision | None = Field(
        default=None,
        description="pause.answered: how it was answered: an approval's approve, edit or "
        "reject; answer for a question or a form; decline when the person declined to answer.",
    )
    edited_args: dict[str, Any] | None = Field(
        default=None,
        description="pause.answered with decision edit: the arguments the call ran with.",
    )
    pause: PauseView | None = Field(
        default=None,
        description="pause.created, pause.escalated, pause.reassigned and pause.approved, "
        "while the caller "
        "may still answer the pause: the GET /v1/pauses item, token included (and its "
        "details with `details=true`).",
    )
    readdressed: ReaddressedView | None = Field(
        default=None,
        description="pause.escalated and pause.reassigned: from whom, to whom, and why.",
    )

    @classmethod
    def data_of(
        cls, item: FeedChange, token: str | None, view: PauseView | None = None
    ) -> dict[str, Any]:
        """The frame's data: absent fields are left out, not sent as null.

        ``view``: the created pause as the listing shows it (with its details when
        the subscriber asked for them); by default, the pause with ``token``.
        """
        change, pause = item.change, item.change.pause
        decision, edited_args = (
            decision_of(pause) if change.state is PauseState.PUBLISHED else (None, None)
        )
        data = cls(
            pause_id=pause.pause_id,
            session_id=pause.session_id,
            agent=pause.agent,
            state=change.state,
            at=change.at,
            answered_by=pause.answered_by if change.state in ANSWERED else None,
            decision=decision,
            edited_args=edited_args,
            readdressed=ReaddressedView.of(pause.readdressed) if change.readdressed else None,
        ).model_dump(mode="json", exclude_none=True)
        if change.state is PauseState.PENDING and item.answerable:
            data["pause"] = (view or PauseView.of(pause, token)).model_dump(mode="json")
        return data
