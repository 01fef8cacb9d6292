"""Every request the client makes, described once for the sync and the async client.

Tokens travel in a JSON body, never in a path or a query string.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import quote

import httpx

from symfonic.client.events import started_or_counted
from symfonic.client.models import (
    Delivery,
    DeliveryList,
    DestinationList,
    Health,
    Pause,
    PausePage,
    Run,
    RunStarted,
    Session,
    SessionCreated,
)
from symfonic.core.contracts.types import (
    AnswerStatus,
    ApprovalRecordedEvent,
    InteractionKind,
    PauseState,
)

T = TypeVar("T")
OnPendingPause = Literal["reject", "abandon"]
# What a turn does while another holds its session (docs/runs.md).
OnBusy = Literal["reject", "enqueue", "interrupt", "rollback"]
TakeOver = Literal["reject", "interrupt", "rollback"]
# The largest page the listing gives: fewest requests to read every pause.
MAX_PAGE = 500
STREAM = {"Accept": "text/event-stream"}
OUTCOME = {"Accept": "application/json"}
DEFAULT_URL = "http://127.0.0.1:8000"
# Reads wait as long as a turn takes: a JSON outcome sends nothing until the end.
DEFAULT_TIMEOUT = httpx.Timeout(30.0, read=None)
# `symfonic serve` closes a connection idle for 5 s; one reused at that moment is
# reset. Dropping idle connections sooner leaves no such race.
LIMITS = httpx.Limits(keepalive_expiry=4)


def service_url(url: str) -> str:
    """``url`` with ``http://`` added when it names no scheme (``127.0.0.1:8000``)."""
    return url if "://" in url else f"http://{url}"


def auth_headers(api_key: str | None) -> dict[str, str]:
    """The key from the argument, else ``SYMFONIC_API_KEY``; no header without one."""
    key = api_key if api_key is not None else os.environ.get("SYMFONIC_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    read: Callable[[Any], T]
    params: dict[str, Any] = field(default_factory=dict)
    body: dict[str, Any] | None = None


@dataclass(frozen=True)
class PauseFilter:
    """Which pauses a listing asks for (``GET /v1/pauses``'s query); None means any."""

    state: PauseState = PauseState.PENDING
    agent: str | None = None
    kind: InteractionKind | None = None
    audience: str | None = None
    q: str | None = None
    details: bool = False

    def params(self) -> dict[str, Any]:
        given = {
            "state": self.state.value,
            "agent": self.agent,
            "kind": None if self.kind is None else self.kind.value,
            "audience": self.audience,
            "q": self.q,
            "details": "true" if self.details else None,
        }
        return {name: value for name, value in given.items() if value is not None}


def create_session(agent: str | None, metadata: dict[str, Any] | None) -> Call[SessionCreated]:
    body: dict[str, Any] = {} if agent is None else {"agent": agent}
    if metadata is not None:
        body["metadata"] = metadata
    return Call("POST", "/v1/sessions", SessionCreated.model_validate, body=body)


def get_session(session_id: str) -> Call[Session]:
    return Call("GET", session_path(session_id), Session.model_validate)


def session_path(session_id: str) -> str:
    # Quoted whole: an id is never read as more path than one segment.
    return f"/v1/sessions/{quote(session_id, safe='')}"


def turn_body(
    message: str,
    base_revision: int | None,
    on_pending_pause: OnPendingPause,
    on_busy: OnBusy = "reject",
) -> dict[str, Any]:
    body: dict[str, Any] = {"message": message, "on_pending_pause": on_pending_pause}
    if base_revision is not None:
        body["base_revision"] = base_revision
    if on_busy != "reject":
        body["on_busy"] = on_busy
    return body


def resume_body(
    token: str, answer: Any, status: AnswerStatus, args_digest: str | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"token": token, "answer": answer, "status": status}
    if args_digest is not None:
        body["args_digest"] = args_digest
    return body


def start_turn(session_id: str, body: dict[str, Any]) -> Call[RunStarted]:
    path = f"{session_path(session_id)}/turns"
    return Call("POST", path, RunStarted.model_validate, body={**body, "background": True})


def start_resume(body: dict[str, Any]) -> Call[RunStarted | ApprovalRecordedEvent]:
    return Call("POST", "/v1/resume", started_or_counted, body={**body, "background": True})


def run_path(run_id: str) -> str:
    return f"/v1/runs/{quote(run_id, safe='')}"


def get_run(run_id: str) -> Call[Run]:
    return Call("GET", run_path(run_id), Run.model_validate)


def cancel_run(run_id: str) -> Call[Run]:
    return Call("POST", f"{run_path(run_id)}/cancel", Run.model_validate)


def pause_page(which: PauseFilter, limit: int, cursor: str | None) -> Call[PausePage]:
    params = {**which.params(), "limit": limit}
    if cursor is not None:
        params["cursor"] = cursor
    return Call("GET", "/v1/pauses", PausePage.model_validate, params=params)


def reassign(pause_id: str, audience: str, reason: str, keep_previous: bool) -> Call[Pause]:
    body = {"audience": audience, "reason": reason, "keep_previous": keep_previous}
    path = f"/v1/pauses/{pause_id}/reassign"
    return Call("POST", path, Pause.model_validate, body=body)


def deliveries(
    states: Iterable[str] | None, type: str | None, url: str | None, limit: int
) -> Call[DeliveryList]:
    params: dict[str, Any] = {"limit": limit}
    if states:
        params["state"] = list(states)
    if type is not None:
        params["type"] = type
    if url is not None:
        params["url"] = url
    return Call("GET", "/v1/webhooks/deliveries", DeliveryList.model_validate, params=params)


def destinations() -> Call[DestinationList]:
    return Call("GET", "/v1/webhooks/destinations", DestinationList.model_validate)


def resend(delivery_id: int) -> Call[Delivery]:
    path = f"/v1/webhooks/deliveries/{delivery_id}/resend"
    return Call("POST", path, Delivery.model_validate)


def health() -> Call[Health]:
    return Call("GET", "/v1/health", Health.model_validate)
