"""`/v1/runs`: a run's state, its events as SSE from any worker, and its cancel.

To anyone who may not see a run it does not exist (404).
"""

from typing import Annotated

from fastapi import APIRouter, Header, Path, Request
from starlette.responses import Response

from symfonic.core.contracts.wire import RunView
from symfonic.server.http.openapi import run_events_response
from symfonic.server.http.service import AuthenticatingRoute, Caller, Host, Service
from symfonic.server.http.sse import RunEventStream
from symfonic.server.transport.errors import documented

RUN_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
RunId = Annotated[str, Path(pattern=RUN_ID_PATTERN, description="The run's id.")]


router = APIRouter(prefix="/v1/runs", tags=["runs"], route_class=AuthenticatingRoute)


@router.get(
    "/{run_id}",
    response_model=RunView,
    responses=documented(401, 404, 422, 503),
    summary="A run: its state, outcome and session",
)
async def get_run(run_id: RunId, principal: Caller, host: Host, service: Service) -> RunView:
    record = await service.runs.visible_run(run_id, principal)
    return RunView.of(record, service.runs.state_of(record))


@router.post(
    "/{run_id}/cancel",
    status_code=202,
    response_model=RunView,
    responses=documented(401, 404, 409, 422, 503),
    summary="Cancel a run, on whichever worker runs it",
)
async def cancel_run(run_id: RunId, principal: Caller, host: Host, service: Service) -> RunView:
    """The run becomes `cancelled` at once and its turn publishes nothing: a resume's
    pause is `abandoned`, a first turn's session takes new turns. The worker running
    it stops the turn at its next step. 409 `run_not_running` when it already ended
    or its turn already settled."""
    cancelled = await service.runs.cancel(run_id, principal)
    return RunView.of(cancelled, service.runs.state_of(cancelled))


@router.get(
    "/{run_id}/events",
    response_model=None,
    responses={
        **run_events_response(
            "The run's events as SSE, the same frames as the turn's own stream, each "
            "`id:` its number in the run: from the first, or after `Last-Event-ID`, "
            "then live until the run ends."
        ),
        **documented(401, 404, 422, 429, 503),
    },
    summary="Follow a run's events, from any worker",
)
async def run_events(
    run_id: RunId,
    request: Request,
    principal: Caller,
    host: Host,
    service: Service,
    last_event_id: Annotated[str | None, Header(description="The last `id:` received.")] = None,
) -> Response:
    after = _position(last_event_id)
    record = await service.runs.visible_run(run_id, principal)
    slot = service.shares.acquire(principal, request.scope, idle=False, resumable=True)
    return RunEventStream(service.runs.follow(record, principal, after), slot=slot)


def _position(last_event_id: str | None) -> int:
    """The number a reconnecting client names; anything else replays from the start."""
    if last_event_id is None or not last_event_id.strip().isdigit():
        return 0
    return int(last_event_id.strip())
