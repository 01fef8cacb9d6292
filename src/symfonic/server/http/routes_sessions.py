"""`/v1/sessions`: create a session, read it, and run a turn on it.

A turn is refused before its stream starts, so a 200 is always a turn that ran
(docs/runs.md).
"""

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Body, Path, Request
from starlette.responses import JSONResponse, Response

from symfonic.agent.agent import SymfonicAgent
from symfonic.core.contracts.pause_views import MessageView, PauseView
from symfonic.core.contracts.principal import Principal
from symfonic.core.contracts.store import PauseRecord, SessionRecord
from symfonic.core.contracts.types import PauseState
from symfonic.core.contracts.wire import RunStarted, SessionCreated, SessionStatus, SessionView
from symfonic.core.messages import MessageBody
from symfonic.server.http.negotiate import respond
from symfonic.server.http.openapi import run_started_response, turn_responses
from symfonic.server.http.schemas import (
    SESSION_ID_PATTERN,
    CreateSession,
    TurnRequest,
)
from symfonic.server.http.service import AuthenticatingRoute, Caller, Host, HttpService, Service
from symfonic.server.transport.errors import documented

SessionId = Annotated[str, Path(pattern=SESSION_ID_PATTERN, description="The session's id.")]

TURN_RESPONSES = {
    **turn_responses(
        "The turn's events as SSE (default), or its outcome as JSON with "
        "`Accept: application/json`. The stream ends with exactly one of "
        "`turn.paused`, `response.complete` or `error`."
    ),
    **run_started_response(),
    **documented(400, 401, 404, 409, 413, 415, 422, 429, 503),
}


router = APIRouter(prefix="/v1/sessions", tags=["sessions"], route_class=AuthenticatingRoute)


@router.post(
    "",
    status_code=201,
    response_model=SessionCreated,
    responses=documented(400, 401, 404, 413, 415, 422, 503),
    summary="Create a session owned by the caller",
)
async def create_session(
    principal: Caller, host: Host, body: Annotated[CreateSession | None, Body()] = None
) -> SessionCreated:
    request = body or CreateSession()
    agent = host.agent(request.agent)
    session_id = await agent.create_session(principal, request.metadata)
    return SessionCreated(session_id=session_id, agent=agent.name, revision=0, status="idle")


@router.get(
    "/{session_id}",
    response_model=SessionView,
    responses=documented(401, 404, 422, 503),
    summary="A session: its status, pending pause and committed messages",
)
async def get_session(session_id: SessionId, principal: Caller, host: Host) -> SessionView:
    agent = await host.viewer_of_session(session_id)
    session = await agent.get_session(session_id, principal)
    open_pause = await host.store.open_pause(session_id)
    history = await host.store.history(session_id, session.revision)
    return session_view(agent, session, open_pause, history, principal)


@router.post(
    "/{session_id}/turns",
    response_model=None,
    responses=TURN_RESPONSES,
    summary="Run a turn: a user message to an answer, a pause, or an error",
)
async def post_turn(
    session_id: SessionId,
    body: TurnRequest,
    request: Request,
    principal: Caller,
    host: Host,
    service: Service,
) -> Response:
    agent = await host.agent_of_session(session_id)
    if body.on_busy == "enqueue":
        return await queued_turn(agent, session_id, body, principal, service)
    if body.background:
        return await background_turn(agent, session_id, body, principal, service)
    events = agent.stream(
        body.message,
        session_id,
        principal,
        base_revision=body.base_revision,
        on_pending_pause=body.on_pending_pause,
        on_busy=body.on_busy,
    )
    events = service.runs.then_queued(agent, session_id, events)
    return await respond(request, events, service.shares, principal)


async def background_turn(
    agent: SymfonicAgent,
    session_id: str,
    body: TurnRequest,
    principal: Principal,
    service: HttpService,
) -> Response:
    """Start the turn in this worker's background runs; 202 once nothing can refuse it."""
    assert body.on_busy != "enqueue"
    started = await service.in_background(
        principal,
        lambda tasks: agent.start(
            body.message,
            session_id,
            principal,
            tasks=tasks,
            base_revision=body.base_revision,
            on_pending_pause=body.on_pending_pause,
            on_busy=body.on_busy,
            started=service.runs.track,
        ),
    )
    assert started.run_id is not None  # only an approval starts no run
    return JSONResponse(RunStarted.of(started.run_id).model_dump(), status_code=202)


async def queued_turn(
    agent: SymfonicAgent,
    session_id: str,
    body: TurnRequest,
    principal: Principal,
    service: HttpService,
) -> Response:
    """Queue the message behind the session's turn, refusals first; 202 with its run.
    It runs here at once when nothing holds the session and nothing is queued before it."""
    queued = await agent.start(
        body.message,
        session_id,
        principal,
        tasks=service.runs.tasks,  # 503 before anything is queued, where nothing runs them
        base_revision=body.base_revision,
        on_pending_pause=body.on_pending_pause,
        on_busy="enqueue",
        started=service.runs.track,
    )
    assert queued.run_id is not None
    return JSONResponse(RunStarted.of(queued.run_id).model_dump(), status_code=202)


def session_view(
    agent: SymfonicAgent,
    session: SessionRecord,
    open_pause: PauseRecord | None,
    history: Sequence[MessageBody],
    principal: Principal,
) -> SessionView:
    """``session`` as ``principal`` sees it.

    Its pending pause is shown only while it can still be answered, and with its
    token only to a principal who may answer it. A claimed pause means a resume
    is running, so the session is ``running`` however its row reads.
    """
    pending = (
        open_pause if open_pause is not None and open_pause.answerable(agent.clock()) else None
    )
    claimed = open_pause is not None and open_pause.state is PauseState.CLAIMED
    status: SessionStatus = (
        "running" if session.running or claimed else "paused" if pending else "idle"
    )
    return SessionView(
        session_id=session.session_id,
        agent=session.agent,
        revision=session.revision,
        status=status,
        metadata=session.metadata,
        parent_session_id=session.metadata.get("parent_session_id"),
        pending_pause=None
        if pending is None
        else PauseView.of(
            pending,
            # A delegate's pause is answered with its caller's token, never its own.
            agent.token_for(pending)
            if principal.may_answer(pending) and pending.parent_session_id is None
            else None,
        ),
        messages=[MessageView.model_validate(body) for body in history],
    )
