"""The bodies of runs: a background run started, and a run as its viewers see it."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, cast

from pydantic import BaseModel, Field

from symfonic.core.contracts.run_events import RunRecord, RunState
from symfonic.server.transport.errors import ErrorDetail

RUN_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


class RunStarted(BaseModel):
    """A turn or resume accepted to run in the background (202)."""

    run_id: str = Field(description="The run's id, as in its `turn.started` event.")
    events_url: str = Field(
        description="Its events as SSE, from the start or from `Last-Event-ID`, on any worker."
    )

    @classmethod
    def of(cls, run_id: str) -> RunStarted:
        return cls(run_id=run_id, events_url=f"/v1/runs/{run_id}/events")


class RunOutcome(BaseModel):
    """How a run ended; a pause's token is never here (its events carry it to who may
    answer, as does `GET /v1/sessions/{id}`)."""

    status: Literal["complete", "paused", "failed"]
    revision: int
    answer: str | None = None
    pause_id: str | None = None
    error: ErrorDetail | None = None


# The states a client is shown: a rolled-back run (``forgotten``) is shown to nobody.
ShownState = Literal["queued", "running", "paused", "complete", "failed", "cancelled"]


class RunView(BaseModel):
    run_id: str
    session_id: str
    state: ShownState = Field(
        description="`queued`: a message sent with `on_busy: enqueue`, waiting for its "
        "session (a cancel takes it out of the queue). `failed` also for a run whose "
        "worker stopped before it ended."
    )
    outcome: RunOutcome | None = Field(
        default=None, description="Once it has ended, how (none for a run its worker lost)."
    )
    created_at: datetime
    ended_at: datetime | None = None

    @classmethod
    def of(cls, record: RunRecord, state: RunState) -> RunView:
        outcome = record.outcome
        return cls(
            run_id=record.run_id,
            session_id=record.session_id,
            state=cast(ShownState, state.value),
            outcome=None if outcome is None else RunOutcome.model_validate(outcome),
            created_at=record.created_at,
            ended_at=record.ended_at,
        )
