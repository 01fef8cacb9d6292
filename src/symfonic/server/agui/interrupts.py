"""A symfonic pause as an AG-UI interrupt, and an AG-UI resume payload as a symfonic answer.

An interrupt's `id` is the pause token, so AG-UI redeems exactly the capability `POST
/v1/resume` does (payloads in docs/agui.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ag_ui.core import Interrupt

from symfonic.core.contracts.store import PauseRecord
from symfonic.core.contracts.types import (
    Answer,
    AnswerStatus,
    InteractionKind,
    PauseQuestion,
    TurnPausedEvent,
)

TOOL_CALL = "tool_call"
INPUT_REQUIRED = "input_required"
DECLINE = {"action": "decline"}
"""The payload of a ``resolved`` entry that declines an MCP server's question."""

_APPROVE_KEYS = frozenset({"approved", "editedArgs"})
_REJECT_KEYS = frozenset({"approved", "reason"})


def reason_of(kind: InteractionKind) -> str:
    return TOOL_CALL if kind is InteractionKind.APPROVAL else INPUT_REQUIRED


def wire_time(moment: datetime) -> str:
    """ISO 8601 in UTC with a ``Z``: what the reference client parses as a date."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _edit_args_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The tool's argument schema, read back from the approval answer schema's edit branch."""
    for branch in schema.get("oneOf", ()):
        properties = branch.get("properties", {}) if isinstance(branch, dict) else {}
        if properties.get("decision") == {"const": "edit"}:
            args = properties.get("args")
            if isinstance(args, dict):
                return args
    return {"type": "object"}


def approval_response_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The answer schema an AG-UI front end sees: the AG-UI shapes, or symfonic's own."""
    agui = {
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "approved": {"const": True},
                    "editedArgs": _edit_args_schema(schema),
                },
                "required": ["approved"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {"approved": {"const": False}, "reason": {"type": "string"}},
                "required": ["approved"],
                "additionalProperties": False,
            },
        ]
    }
    return {"anyOf": [agui, schema]}


def interrupt_of(event: TurnPausedEvent, addressed: Mapping[str, Any] | None = None) -> Interrupt:
    """``event`` as an interrupt; ``addressed``: `addressed_metadata` of its pause."""
    schema = event.response_schema
    if event.kind is InteractionKind.APPROVAL:
        schema = approval_response_schema(schema)
    return Interrupt(
        id=event.pause_token,
        reason=reason_of(event.kind),
        message=event.query,
        tool_call_id=event.tool_call_id,
        response_schema=schema,
        expires_at=wire_time(event.expires_at),
        metadata={"symfonic": {**_metadata(event), **(addressed or {})}},
    )


def _metadata(event: TurnPausedEvent) -> dict[str, Any]:
    """What symfonic adds to an interrupt: the kind, the pause, the delegate or MCP
    server that asked, an approval's digest of the call it asks about, and, for an
    approval that needs several approvers, where its vote stands."""
    metadata: dict[str, Any] = {"kind": event.kind.value, "pauseId": event.pause_id}
    if event.sub_agent is not None:
        metadata["subAgent"] = event.sub_agent
    if event.server is not None:
        metadata["server"] = event.server
    if event.args_digest is not None:
        metadata["argsDigest"] = event.args_digest
    if event.approvals_required > 1:
        metadata["approvalsRequired"] = event.approvals_required
        metadata["approvals"] = [
            {"principal": vote.principal, "at": wire_time(vote.at)} for vote in event.approvals
        ]
        metadata["allowRequester"] = event.allow_requester
    return metadata


def addressed_metadata(pause: PauseRecord, may_answer: bool) -> dict[str, Any]:
    """Who an interrupt's pause is addressed to now, in its metadata from the first
    interrupt on: its ``audience`` (``None``: the thread's owner), whether the run's
    principal may answer it (``answerable``: ``may_answer``), and, once it was handed
    to another audience, the latest hand-over (``readdressed``)."""
    addressed: dict[str, Any] = {"audience": pause.audience, "answerable": may_answer}
    done = pause.readdressed
    if done is None:
        return addressed
    moved: dict[str, Any] = {
        "kind": done.kind.value,
        "from": done.previous,
        "to": done.audience,
        "at": wire_time(done.at),
    }
    if done.after is not None:
        moved["after"] = done.after
    if done.by is not None:
        moved["by"] = done.by
    if done.reason is not None:
        moved["reason"] = done.reason
    return {**addressed, "readdressed": moved}


def status_of(pause: PauseQuestion, status: AnswerStatus, payload: Answer) -> AnswerStatus:
    """How a resume entry answers ``pause``: ``declined`` for an MCP server's question
    whose entry carries `DECLINE`, else the entry's own status."""
    if status != "resolved" or pause.server is None or payload != DECLINE:
        return status
    fields = pause.response_schema.get("properties")
    return status if isinstance(fields, dict) and "action" in fields else "declined"


def answer_of(kind: InteractionKind, status: AnswerStatus, payload: Answer) -> Answer:
    """The symfonic answer a resume entry's payload stands for (unchanged if not an AG-UI shape).

    Anything that is not one of the shapes above goes through as it is, and the
    pause's schema refuses it before the pause is claimed.
    """
    if status != "resolved":
        return None
    if kind is not InteractionKind.APPROVAL or not isinstance(payload, dict):
        return payload
    if "decision" in payload or "approved" not in payload:
        return payload
    keys = frozenset(payload)
    approved = payload["approved"]
    if approved is True and keys <= _APPROVE_KEYS:
        if "editedArgs" in payload:
            return {"decision": "edit", "args": payload["editedArgs"]}
        return {"decision": "approve"}
    if approved is False and keys <= _REJECT_KEYS:
        if "reason" in payload:
            return {"decision": "reject", "reason": payload["reason"]}
        return {"decision": "reject"}
    return payload
