"""What a webhook's body says, one pydantic model per event type; their JSON Schema is committed
as `docs/webhook-payloads.schema.json`. A pause's answer is never sent, and its token only to a
subscription that opts in.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from symfonic.core.contracts.store import PauseRecord
from symfonic.core.contracts.types import InteractionKind
from symfonic.core.contracts.webhooks import WebhookDelivery, WebhookEventType

SCHEMA_ID = "https://symfonic.dev/schemas/webhook-payloads.json"


class ApprovalData(BaseModel):
    """One principal's approval of a pause that needs several."""

    model_config = ConfigDict(extra="forbid")

    principal: str
    at: datetime


class PauseData(BaseModel):
    """A pause, as a receiver needs it to tell a person."""

    model_config = ConfigDict(extra="forbid")

    pause_id: str
    session_id: str
    agent: str
    kind: InteractionKind
    query: str
    tool_call_id: str
    audience: str | None = Field(description="the scope that may answer it; null: its owner")
    expires_at: datetime
    args_digest: str | None = Field(
        default=None,
        description="an approval's SHA-256 (hex) of its tool and arguments as RFC 8785 JSON; "
        "null for other kinds",
    )
    server: str | None = Field(
        default=None,
        description="for a question an MCP server asked mid-call: that server's name, as the "
        "agent's connections name it; null for every other pause",
    )
    url: str | None = Field(
        default=None, description="the pause in the web inbox, when an inbox URL is configured"
    )
    approvals_required: int = Field(
        default=1, description="how many distinct principals must approve; 1 for most pauses"
    )
    approvals: list[ApprovalData] = Field(
        default_factory=list,
        description="for a pause that needs several approvals: who approved so far, oldest "
        "first, as the pause is when the delivery is sent",
    )


class AskingPauseData(PauseData):
    """A pause that is waiting for its answer."""

    token: str | None = Field(
        default=None,
        description="the pause's token, only for a subscription with include_token: "
        "whoever holds it may answer the pause",
    )


class AnsweredPauseData(PauseData):
    answered_by: str | None
    answered_at: datetime | None
    edited_args_digest: str | None = Field(
        default=None,
        description="for an approval answered with an edit: the digest of the edited call",
    )


class ReaddressedPauseData(PauseData):
    """A pending pause handed to another audience (``audience``, above)."""

    previous_audience: str | None = Field(
        description="the audience before; null: the session's owner"
    )
    by: str | None = Field(default=None, description="pause.reassigned: the operator")
    reason: str | None = Field(default=None, description="pause.reassigned: the operator's reason")
    after: float | None = Field(
        default=None,
        description="pause.escalated: the step's seconds after the pause was created",
    )


class ApprovedPauseData(AskingPauseData):
    """An approval counted toward a pause that needs several; it still waits."""

    approved_by: str | None = Field(description="who gave the approval this event is about")


class FailedTurnData(BaseModel):
    """A turn that ended in an error and published nothing."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    agent: str
    pause_id: str | None = Field(
        description="the pause a resumed turn answered; null: a first turn"
    )
    code: str = Field(description="the error code of the turn's error frame, e.g. model_error")
    message: str


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    timestamp: datetime


class PauseCreated(_Event):
    type: Literal["pause.created"]
    data: AskingPauseData


class PauseExpiring(_Event):
    type: Literal["pause.expiring"]
    data: AskingPauseData


class PauseAnswered(_Event):
    type: Literal["pause.answered"]
    data: AnsweredPauseData


class PauseExpired(_Event):
    type: Literal["pause.expired"]
    data: PauseData


class PauseAbandoned(_Event):
    type: Literal["pause.abandoned"]
    data: PauseData


class PauseSuperseded(_Event):
    type: Literal["pause.superseded"]
    data: PauseData


class PauseEscalated(_Event):
    type: Literal["pause.escalated"]
    data: ReaddressedPauseData


class PauseReassigned(_Event):
    type: Literal["pause.reassigned"]
    data: ReaddressedPauseData


class PauseApproved(_Event):
    type: Literal["pause.approved"]
    data: ApprovedPauseData


class TurnFailed(_Event):
    type: Literal["turn.failed"]
    data: FailedTurnData


WebhookPayload = Annotated[
    PauseCreated
    | PauseExpiring
    | PauseAnswered
    | PauseExpired
    | PauseAbandoned
    | PauseSuperseded
    | PauseEscalated
    | PauseReassigned
    | PauseApproved
    | TurnFailed,
    Field(discriminator="type"),
]
PAYLOAD: TypeAdapter[WebhookPayload] = TypeAdapter(WebhookPayload)

_PAUSE_DATA: dict[WebhookEventType, type[PauseData]] = {
    WebhookEventType.PAUSE_CREATED: AskingPauseData,
    WebhookEventType.PAUSE_EXPIRING: AskingPauseData,
    WebhookEventType.PAUSE_ANSWERED: AnsweredPauseData,
    WebhookEventType.PAUSE_ESCALATED: ReaddressedPauseData,
    WebhookEventType.PAUSE_REASSIGNED: ReaddressedPauseData,
    WebhookEventType.PAUSE_APPROVED: ApprovedPauseData,
}


def json_schema() -> dict[str, Any]:
    """The JSON Schema every body validates against (a union on ``type``)."""
    schema = PAYLOAD.json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def pause_data(
    pause: PauseRecord,
    event: WebhookEventType,
    *,
    inbox_url: str | None,
    token: str | None,
    detail: dict[str, Any] | None = None,
) -> PauseData:
    """``detail``: what the delivery itself recorded (a re-addressing's from, by and why),
    where the row shows only the latest state."""
    fields: dict[str, Any] = {
        "pause_id": pause.pause_id,
        "session_id": pause.session_id,
        "agent": pause.agent,
        "kind": pause.kind,
        "query": pause.query,
        "tool_call_id": pause.tool_call_id,
        "audience": pause.audience,
        "expires_at": pause.expires_at,
        "args_digest": pause.args_digest,
        "server": pause.server,
        "approvals_required": pause.approvals_required,
        "approvals": [{"principal": v.principal, "at": v.at} for v in pause.approvals],
        "url": None if inbox_url is None else f"{inbox_url.rstrip('/')}/inbox#{pause.pause_id}",
    }
    model = _PAUSE_DATA.get(event, PauseData)
    if model is ApprovedPauseData:
        fields["token"] = token
        fields["approved_by"] = (detail or {}).get("approved_by")
    elif model is AskingPauseData:
        fields["token"] = token
    elif model is AnsweredPauseData:
        fields["answered_by"] = pause.answered_by
        fields["answered_at"] = pause.answered_at
        fields["edited_args_digest"] = pause.edited_args_digest
    elif model is ReaddressedPauseData:
        told = detail or {}
        fields["audience"] = told.get("audience", pause.audience)
        fields["previous_audience"] = told.get("previous")
        fields["by"], fields["reason"] = told.get("by"), told.get("reason")
        fields["after"] = told.get("after")
    return model(**fields)


def body_of(
    delivery: WebhookDelivery,
    pause: PauseRecord | None,
    *,
    inbox_url: str | None = None,
    token: str | None = None,
) -> bytes | None:
    """The body of one delivery, as sent and signed; ``None``: its pause is gone."""
    data: BaseModel
    if delivery.type is WebhookEventType.TURN_FAILED:
        detail = delivery.detail or {}
        data = FailedTurnData(
            session_id=delivery.session_id or "",
            agent=str(detail.get("agent", "")),
            pause_id=delivery.pause_id,
            code=str(detail.get("code", "internal")),
            message=str(detail.get("message", "")),
        )
    elif pause is None:
        return None
    else:
        data = pause_data(
            pause, delivery.type, inbox_url=inbox_url, token=token, detail=delivery.detail
        )
    event = {"type": delivery.type.value, "timestamp": delivery.occurred_at, "data": data}
    return PAYLOAD.dump_json(PAYLOAD.validate_python(event), exclude_none=False)
