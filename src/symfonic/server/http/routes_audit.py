"""`GET /v1/audit`: the audit trail, oldest first, a page at a time, for a principal with the
`auditor` scope only.
"""

import base64
import binascii
import re
from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from symfonic.core.contracts.errors import InvalidCursor, ScopeRequired
from symfonic.core.contracts.principal import WILDCARD, Principal
from symfonic.server.http.service import AuthenticatingRoute, Caller, Host
from symfonic.server.transport.errors import documented

AUDITOR = "auditor"
MAX_LIMIT = 1000
_CURSOR = re.compile(r"[A-Za-z0-9_-]{1,40}")
_PREFIX = "audit:"


class AuditRecordView(BaseModel):
    """One audit record as stored: what happened, to which pause, and its place in the chain."""

    sequence: int
    at: str = Field(description="when, in UTC, ISO 8601 to the millisecond")
    event: str = Field(
        description="asked, answered, published, superseded, expired, abandoned, escalated, "
        "reassigned"
    )
    session_id: str | None
    agent: str | None
    pause_id: str | None
    principal: str | None = Field(
        description="who did it; none for the sweeper's expiry or escalation; a reassignment's "
        "operator"
    )
    decision: str | None
    reason: str | None
    args_digest: str | None
    edited_args_digest: str | None
    parent_session_id: str | None
    prev_hash: str
    hash: str = Field(description="SHA-256 of the record's RFC 8785 JSON, prev_hash included")
    from_audience: str | None = Field(
        default=None,
        description="escalated, reassigned: who could answer before (`principal:NAME`: its "
        "owner); hashed only when set",
    )
    to_audience: str | None = Field(
        default=None, description="escalated, reassigned: who answers now; hashed only when set"
    )


class AuditPage(BaseModel):
    records: list[AuditRecordView]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page")


def encode_cursor(sequence: int) -> str:
    return base64.urlsafe_b64encode(f"{_PREFIX}{sequence}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    refusal = InvalidCursor(
        "this cursor is not one an audit page handed out; "
        "start again without a cursor and follow each page's next_cursor"
    )
    if not _CURSOR.fullmatch(cursor):
        raise refusal
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError) as error:
        raise refusal from error
    number = text.removeprefix(_PREFIX)
    if not text.startswith(_PREFIX) or not number.isdigit() or len(number) > 18:
        raise refusal
    return int(number)


def _auditor(principal: Principal) -> None:
    if AUDITOR not in principal.scopes and WILDCARD not in principal.scopes:
        raise ScopeRequired(
            f"{principal.name} may not read the audit trail: that needs the auditor scope"
        )


router = APIRouter(prefix="/v1", route_class=AuthenticatingRoute, tags=["audit"])

AUDIT_RESPONSES = documented(400, 401, 403, 422, 503)
AUDIT_RESPONSES[403]["description"] = "This principal does not have the `auditor` scope."


@router.get(
    "/audit",
    response_model=AuditPage,
    responses=AUDIT_RESPONSES,
    summary="The audit trail, oldest first, a page at a time (an auditor's)",
)
async def list_audit(
    principal: Caller,
    host: Host,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 100,
) -> AuditPage:
    _auditor(principal)
    after = 0 if cursor is None else decode_cursor(cursor)
    found = await host.store.audit_records(after=after, limit=limit)
    more = len(found) == limit
    return AuditPage(
        records=[AuditRecordView(**asdict(record)) for record in found],
        next_cursor=encode_cursor(found[-1].sequence) if more else None,
    )
